// A client developer's use of conclave serve through the official openai
// npm package: chat completions without and with streaming, and a
// background response polled to the end. It prints one JSON object of
// what it saw, which the Go test checks.
const { OpenAI } = require("openai");

async function main() {
  const client = new OpenAI({ baseURL: process.env.SERVE_URL, apiKey: process.env.SERVE_KEY, maxRetries: 0 });
  const model = process.env.SERVE_MODEL;
  const out = {};

  const plain = await client.chat.completions.create({ model, messages: [{ role: "user", content: "node plain question" }] });
  out.plain = {
    id: plain.id,
    content: plain.choices[0].message.content,
    reasoning: plain.choices[0].message.reasoning_content,
    usage: plain.usage,
    meta: plain.conclave_metadata,
  };

  const stream = await client.chat.completions.create({
    model, stream: true,
    messages: [{ role: "user", content: "node first question" }, { role: "assistant", content: "node first answer" }, { role: "user", content: "node follow-up" }],
  });
  const streamed = { chunks: 0, content: "", reasoning: "", usage: null, meta: null, finish: null };
  for await (const chunk of stream) {
    streamed.chunks++;
    const choice = chunk.choices[0] || {};
    const delta = choice.delta || {};
    streamed.content += delta.content || "";
    streamed.reasoning += delta.reasoning_content || "";
    if (choice.finish_reason) streamed.finish = choice.finish_reason;
    if (chunk.usage) streamed.usage = chunk.usage;
    if (chunk.conclave_metadata) streamed.meta = chunk.conclave_metadata;
  }
  out.stream = streamed;

  const bg = await client.responses.create({ model, input: "node background question", background: true });
  out.background = { id: bg.id, status: bg.status };
  let r = bg;
  const deadline = Date.now() + 180000;
  while (r.status === "queued" || r.status === "in_progress") {
    if (Date.now() > deadline) throw new Error("background response did not end");
    await new Promise((res) => setTimeout(res, 200));
    r = await client.responses.retrieve(bg.id);
  }
  out.background.final = { status: r.status, text: r.output_text, usage: r.usage };

  try {
    await client.chat.completions.create({ model: "no-such-team", messages: [{ role: "user", content: "x" }] });
    out.unknownModel = "no error";
  } catch (e) {
    out.unknownModel = { status: e.status, message: e.message };
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + "\n");
  process.exit(1);
});
