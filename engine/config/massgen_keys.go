package config

// MassGen's settings that are not Conclave fields, by where they appear in a
// MassGen config, with what Conclave does instead. massgen.go reads them.

// ignoredKey is a MassGen setting Conclave accepts without acting on it.
// why says what Conclave does instead; display keys are always notes, the
// others warn when switched on and are notes when off.
type ignoredKey struct {
	why     string
	display bool
}

const (
	whyStorage   = "Conclave keeps every answer, workspace and trace in its session storage (--storage); this folder is not used"
	whyTool      = "provider-side tools are not enabled: the agent runs with Conclave's workspace tools only"
	whyAgentTime = "Conclave has no per-agent timeout: the round timeouts (initial_round_timeout_seconds, subsequent_round_timeout_seconds, round_timeout_grace_seconds), max_steps_per_agent and orchestrator_timeout_seconds bound the run"
	whyFeature   = "this MassGen feature is not implemented in Conclave"
	whyDocker    = "the command tool runs in the worker's bubblewrap sandbox, not in Docker; this setting is not used"
	whyClaudeSDK = "a Claude Code SDK setting; it has no effect on the chat API"
)

var topCompat = map[string]ignoredKey{
	"ui":      {"display settings: Conclave shows progress in the terminal (`run`, `--automation`) and the Temporal Web UI", true},
	"display": {"display settings: Conclave shows progress in the terminal and the Temporal Web UI", true},
	"memory":  {"memory between sessions is not kept; each session starts from its task", false},
}

// orchestratorCompat holds MassGen's orchestrator settings, accepted both at
// orchestrator level and inside orchestrator.coordination (MassGen has moved
// settings between the two).
var orchestratorCompat = map[string]ignoredKey{
	"snapshot_storage":              {whyStorage, true},
	"agent_temporary_workspace":     {whyStorage, true},
	"session_storage":               {whyStorage, true},
	"log_dir":                       {whyStorage, true},
	"debug_final_answer":            {"a debugging aid of MassGen's display", true},
	"context_paths":                 {"agents cannot read or write your local files; put what they need in the task or the criteria", false},
	"skip_coordination_rounds":      {"coordination always runs", false},
	"dspy":                          {"question paraphrasing is not implemented", false},
	"enable_planning_mode":          {whyFeature, false},
	"planning_mode_instruction":     {"used only by planning mode, which Conclave does not have", true},
	"enable_agent_task_planning":    {whyFeature, false},
	"max_tasks_per_plan":            {"used only by task planning, which Conclave does not have", true},
	"task_planning_filesystem_mode": {whyFeature, false},
	"enable_memory_filesystem_mode": {whyFeature, false},
	"use_skills":                    {whyFeature, false},
	"massgen_skills":                {whyFeature, false},
	"skills_directory":              {"used only by skills, which Conclave does not have", true},
	"load_previous_session_skills":  {whyFeature, false},
	"persona_generator":             {whyFeature, false},
	"enable_subagents":              {whyFeature, false},
	"subagent_default_timeout":      {"used only by subagents, which Conclave does not have", true},
	"subagent_max_concurrent":       {"used only by subagents, which Conclave does not have", true},
	"subagent_orchestrator":         {whyFeature, false},
	"broadcast":                     {whyFeature, false},
	"broadcast_timeout":             {"used only by broadcasts, which Conclave does not have", true},
	"broadcast_wait_by_default":     {"used only by broadcasts, which Conclave does not have", true},
	"max_broadcasts_per_agent":      {"used only by broadcasts, which Conclave does not have", true},
	"broadcast_sensitivity":         {"used only by broadcasts, which Conclave does not have", true},
	"response_depth":                {whyFeature, false},
	"enable_nlip":                   {whyFeature, false},
	"use_two_tier_workspace":        {whyFeature, false},
	"write_mode":                    {whyFeature, false},
	"enable_multimodal_tools":       {whyFeature, false},
}

var timeoutCompat = map[string]ignoredKey{
	"agent_timeout_seconds": {whyAgentTime, false},
}

// timeoutFields are the timeout_settings keys that are Conclave
// orchestrator settings of the same name.
var timeoutFields = []string{"orchestrator_timeout_seconds", "initial_round_timeout_seconds", "subsequent_round_timeout_seconds", "round_timeout_grace_seconds"}

var backendCompat = map[string]ignoredKey{
	"cwd":                      {"every Conclave agent works in its own workspace in the session storage; cwd is not used", true},
	"context_paths":            {"agents cannot read or write your local files; put what they need in the task or the criteria", false},
	"enable_web_search":        {whyTool, false},
	"enable_code_execution":    {whyTool, false},
	"enable_code_interpreter":  {whyTool, false},
	"enable_image_generation":  {whyTool, false},
	"enable_audio_generation":  {whyTool, false},
	"enable_video_generation":  {whyTool, false},
	"enable_file_generation":   {whyTool, false},
	"enable_file_search":       {whyTool, false},
	"vector_store_ids":         {whyTool, false},
	"enable_programmatic_flow": {whyTool, false},
	"enable_tool_search":       {whyTool, false},
	"use_multimodal_tools":     {whyTool, false},
	"custom_tools":             {"custom tools are not loaded: the agent runs with Conclave's workspace tools only", false},
	"disallowed_tools":         {whyClaudeSDK + "; use allowed_tools or exclude_tools", true},
	"upload_files":             {"files are not uploaded; put what the agents need in the task", false},
	"betas":                    {"Anthropic beta headers are not sent", false},
	"permission_mode":          {whyClaudeSDK, true},
	"system_prompt":            {whyClaudeSDK + "; use the agent's system_message", false},
	"max_thinking_tokens":      {whyClaudeSDK + "; use reasoning.effort or extra_body", false},
	"api_version":              {"Conclave calls Azure's v1 API, which takes no api_version", true},
	"agent_config":             {"an AG2 setting; this backend type does not use it", true},
	"group_config":             {"an AG2 setting; this backend type does not use it", true},
}

// requestFields are MassGen backend keys that its chat-completions backend
// sends as request parameters; Conclave sends them through extra_body.
var requestFields = []string{"top_k", "min_p", "repetition_penalty", "chat_template_kwargs", "frequency_penalty", "presence_penalty", "seed", "stop"}
