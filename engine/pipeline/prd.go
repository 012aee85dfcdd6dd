package pipeline

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/conclave-ai/conclave/engine/runes"
)

// ProjectSummary is seed 004's "PRD summary": what every step of a run
// needs to know about the project instead of the whole project document
// (prd.md) — the app type, its base URL, the credentials a step that logs
// in uses, and the stack. It is extracted once per run (InitPipeline stores
// it as context.json) and every step gets its rendering (For). Every field
// is one line of at most a few hundred bytes, so the summary stays small
// whatever the document's size.
type ProjectSummary struct {
	// Project is the document's first heading.
	Project     string `json:"project,omitempty"`
	AppType     string `json:"app_type,omitempty"`
	BaseURL     string `json:"base_url,omitempty"`
	Credentials string `json:"credentials,omitempty"`
	Stack       string `json:"stack,omitempty"`
	// Overview is the document's opening text, kept only when it names
	// neither an app type nor a stack: the bounded fallback for a document
	// that is not laid out with those keys.
	Overview string `json:"overview,omitempty"`
}

// Bounds of a ProjectSummary's fields, in bytes.
const (
	MaxProjectFieldBytes    = 300
	MaxProjectOverviewBytes = 800
)

type projectField int

const (
	fieldNone projectField = iota
	fieldAppType
	fieldBaseURL
	fieldCredentials
	fieldStack
)

// projectKeys are the keys and headings (lower case, without Markdown
// emphasis, numbering or a parenthesised note) a field is read from.
var projectKeys = map[string]projectField{
	"app type": fieldAppType, "application type": fieldAppType, "type of app": fieldAppType,
	"type of application": fieldAppType, "project type": fieldAppType, "product type": fieldAppType,

	"base url": fieldBaseURL, "url": fieldBaseURL, "app url": fieldBaseURL, "application url": fieldBaseURL,
	"site url": fieldBaseURL, "website": fieldBaseURL, "homepage": fieldBaseURL, "staging url": fieldBaseURL,
	"local url": fieldBaseURL, "dev url": fieldBaseURL,

	"credentials": fieldCredentials, "credential": fieldCredentials, "test credentials": fieldCredentials,
	"login credentials": fieldCredentials, "auth": fieldCredentials, "authentication": fieldCredentials,
	"auth credentials": fieldCredentials, "login": fieldCredentials, "test account": fieldCredentials,
	"test accounts": fieldCredentials, "test user": fieldCredentials, "test users": fieldCredentials,
	"username": fieldCredentials, "user name": fieldCredentials, "email": fieldCredentials, "password": fieldCredentials,

	"stack": fieldStack, "tech stack": fieldStack, "technology stack": fieldStack, "technologies": fieldStack,
	"tech": fieldStack, "built with": fieldStack, "framework": fieldStack, "frameworks": fieldStack,
}

var (
	headingLine = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	listMarker  = regexp.MustCompile(`^\s*(?:>\s*)*(?:[-*+]|\d+[.)])\s+`)
	numbering   = regexp.MustCompile(`^(?:\d+(?:\.\d+)*[.)]?\s+)`)
	parenNote   = regexp.MustCompile(`\s*\([^)]*\)\s*$`)
	firstURL    = regexp.MustCompile(`https?://[^\s)<>\]"'` + "`" + `]+`)
	// userinfo is the "user:password@" of a URL, with or without its
	// scheme ("//user:pw@host"); the password may hold an '@' (up to the
	// last one of the authority).
	// Browsers also read "\\" as "//", drop tabs and carriage returns
	// inside a URL, and some documents hold a fullwidth or small "@".
	userinfo = regexp.MustCompile(`(?i)((?:\b[a-z][a-z0-9+.-]*:)?(?://|\\\\))((?:[^/\\?#\s@＠﹫]|[\t\r])+(?:[@＠﹫](?:[^/\\?#\s@＠﹫]|[\t\r])+)*)[@＠﹫]`)
	// looseUserinfo is userinfo with spaces allowed, for a Base URL whose
	// lines were joined (a URL broken across two lines of its section).
	looseUserinfo = regexp.MustCompile(`(?i)((?:\b[a-z][a-z0-9+.-]*:)?(?://|\\\\))([^/\\?#@＠﹫]+)[@＠﹫]`)
	// brokenUserinfo is a URL's "//user:pass" at a line's end whose "…@host"
	// starts the next line: browsers drop the line break inside a URL.
	brokenUserinfo = regexp.MustCompile(`(?im)((?:\b[a-z][a-z0-9+.-]*:)?(?://|\\\\)[^/\\?#\s@＠﹫:]*:[^/\\?#\s@＠﹫]*)\n[ \t]*([^\s/\\@＠﹫]*[@＠﹫])`)
	// loginWords: a step whose name, title or prompt matches logs in, and
	// is given the credentials.
	loginWords = regexp.MustCompile(`(?i)\b(?:log(?:ged|ging)?[ -]?(?:in|on)(?:to)?|logon|sign(?:ed|ing)?[ -]?(?:in|on|up)(?:to)?|auth|authenticat\w*|authori[sz]\w*|oauth2?|passwords?|credentials?)\b`)
)

// SummarizeProject extracts the ProjectSummary of a project document. It
// reads "Key: value" lines (in lists, with Markdown emphasis, or as
// two-column table rows) and sections under a heading named like a field,
// for these keys, case-insensitively: "App type" (or "Application type",
// "Project type"…), "Base URL" (or "URL", "Website"…), "Credentials" (or
// "Auth", "Authentication", "Login", "Test account", "Username",
// "Password", "Email"), "Stack" (or "Tech stack", "Technologies", "Built
// with", "Framework"). Without a Base URL key the first http(s) URL
// without a user or password in it is taken. Without an app type and a
// stack, the opening text is kept as Overview. It is deterministic: the
// same document always gives the same summary.
func SummarizeProject(doc string) ProjectSummary {
	var s ProjectSummary
	parts := map[projectField][]string{}
	section := fieldNone
	inFence := false
	var opening []string
	openingBytes := 0
	prose := map[projectField]bool{} // the last part of a field is prose
	var urlLogins []string
	// marked is the document with every credentialled URL marked, for the
	// Base URL fallback, which takes only URLs that never had any.
	var marked strings.Builder
	doc = brokenUserinfo.ReplaceAllString(strings.ReplaceAll(doc, "\r\n", "\n"), "${1}${2}")
	for _, raw := range strings.Split(doc, "\n") {
		// Credentials in URLs are taken out of every line before anything
		// is cut to size: a cut URL would no longer look like one.
		line, found := stripURLCredentials(userinfo, strings.TrimSpace(raw))
		urlLogins = append(urlLogins, found...)
		marked.WriteString(userinfo.ReplaceAllString(strings.TrimSpace(raw), "${1}\x00") + "\n")
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			inFence = !inFence
			continue
		}
		if line == "" {
			clear(prose) // a paragraph ends
			continue
		}
		if !inFence {
			if m := headingLine.FindStringSubmatch(line); m != nil {
				if s.Project == "" && m[2] != "" {
					s.Project = bound(m[2], MaxProjectFieldBytes)
				}
				section = classify(m[2])
				clear(prose)
				continue
			}
		}
		text := strings.TrimSpace(listMarker.ReplaceAllString(line, ""))
		f, value, isKey := keyValue(text)
		isKey = isKey && !inFence
		// A line that is not a list item or a key continues the prose
		// before it (a wrapped paragraph); others are parts of their own.
		cont := !isKey && !inFence && text == line && !strings.HasPrefix(text, "|")
		// The overview goes to every step: never a credential.
		if !inFence && openingBytes <= MaxProjectOverviewBytes && section != fieldCredentials && !(isKey && f == fieldCredentials) {
			opening = addPart(opening, text, cont && prose[fieldNone])
			openingBytes += len(text) + 2
			prose[fieldNone] = cont
		}
		switch {
		case isKey && value != "":
			parts[f] = append(parts[f], value)
			prose[f] = false
		case !isKey && section != fieldNone:
			parts[section] = addPart(parts[section], text, cont && prose[section])
			prose[section] = cont
		}
	}
	s.AppType = join(parts[fieldAppType], MaxProjectFieldBytes)
	// A URL broken across the lines of its section is whole again once
	// joined: its credentials are taken out before the field is cut.
	base, found := stripURLCredentials(looseUserinfo, strings.Join(parts[fieldBaseURL], " "))
	urlLogins = append(urlLogins, found...)
	s.BaseURL = bound(base, MaxProjectFieldBytes)
	s.Credentials = join(parts[fieldCredentials], MaxProjectFieldBytes)
	s.Stack = join(parts[fieldStack], MaxProjectFieldBytes)
	if s.BaseURL == "" {
		for _, u := range firstURL.FindAllString(marked.String(), -1) {
			if host, _, _ := strings.Cut(strings.SplitN(u, "://", 2)[1], "/"); !strings.ContainsAny(host, "@＠﹫\x00") {
				s.BaseURL = bound(strings.TrimRight(u, ".,;:"), MaxProjectFieldBytes)
				break
			}
		}
	}
	if s.AppType == "" && s.Stack == "" {
		s.Overview = join(opening, MaxProjectOverviewBytes)
	}
	if len(urlLogins) > 0 {
		s.Credentials = join(append(parts[fieldCredentials], urlLogins...), MaxProjectFieldBytes)
	}
	return s
}

// stripURLCredentials removes the "user:password@" of every URL in line,
// returning them as "URL login: user:password".
func stripURLCredentials(re *regexp.Regexp, line string) (string, []string) {
	var found []string
	line = re.ReplaceAllStringFunc(line, func(m string) string {
		sub := re.FindStringSubmatch(m)
		found = append(found, "URL login: "+sub[2])
		return sub[1]
	})
	return line, found
}

// withoutURLCredentials moves the "user:password@" of every URL outside
// Credentials into Credentials, for a summary read back from context.json
// (which a person may have edited): SummarizeProject takes them out of the
// document's lines itself, before fields are cut to size.
func (s ProjectSummary) withoutURLCredentials() ProjectSummary {
	var found []string
	for _, v := range []*string{&s.Project, &s.AppType, &s.BaseURL, &s.Stack, &s.Overview} {
		var f []string
		re := userinfo
		if v == &s.BaseURL {
			re = looseUserinfo
		}
		*v, f = stripURLCredentials(re, *v)
		found = append(found, f...)
	}
	if len(found) > 0 {
		s.Credentials = join(append([]string{s.Credentials}, found...), MaxProjectFieldBytes)
	}
	return s
}

// addPart appends text as a part of its own, or to the last part when it
// continues it.
func addPart(parts []string, text string, cont bool) []string {
	if cont && len(parts) > 0 {
		parts[len(parts)-1] += " " + text
		return parts
	}
	return append(parts, text)
}

// keyValue reads "Key: value", "**Key:** value" or "| Key | value |" with
// a key of a field.
func keyValue(text string) (projectField, string, bool) {
	if strings.HasPrefix(text, "|") {
		cells := strings.Split(strings.Trim(text, "|"), "|")
		if len(cells) >= 2 {
			if f := classify(cells[0]); f != fieldNone {
				return f, meaningful(clean(strings.Join(cells[1:], " "))), true
			}
		}
		return fieldNone, "", false
	}
	key, value, ok := strings.Cut(text, ":")
	if !ok || len(key) > 40 {
		return fieldNone, "", false
	}
	f := classify(key)
	if f == fieldNone {
		return fieldNone, "", false
	}
	value = meaningful(clean(strings.TrimLeft(value, "*_ ")))
	if labelled[normalize(key)] && value != "" {
		// "Username: …" and "Password: …" keep their names.
		value = normalizeLabel(key) + ": " + value
	}
	return f, value, true
}

// meaningful drops a value that says there is none ("unknown", "n/a").
func meaningful(value string) string {
	switch strings.ToLower(strings.Trim(value, ".")) {
	case "unknown", "n/a", "none", "-":
		return ""
	}
	return value
}

// labelled are the credential keys whose name says what the value is.
var labelled = map[string]bool{"username": true, "user name": true, "email": true, "password": true, "login": true}

func normalizeLabel(key string) string { return strings.Trim(strings.TrimSpace(key), "*_`: ") }

// classify names the field a key or heading is about.
func classify(key string) projectField { return projectKeys[normalize(key)] }

// normalize is a key or heading in lower case, without Markdown emphasis,
// numbering or a parenthesised note.
func normalize(key string) string {
	k := strings.ToLower(strings.Trim(strings.TrimSpace(key), "*_`: "))
	k = numbering.ReplaceAllString(k, "")
	k = parenNote.ReplaceAllString(k, "")
	return strings.Join(strings.Fields(k), " ")
}

// clean is s on one line, valid UTF-8 and without control characters: the
// document may be anything (a binary file, escape sequences), and its
// summary goes into every step's prompt and into context.json.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return strings.Join(strings.Fields(s), " ")
}

// join flattens parts into one line of at most n bytes.
func join(parts []string, n int) string {
	var kept []string
	for _, p := range parts {
		if p = clean(p); p != "" {
			kept = append(kept, p)
		}
	}
	return bound(strings.Join(kept, "; "), n)
}

// bound cleans s and cuts it to at most n bytes, marking the cut.
func bound(s string, n int) string { return runes.Clip(clean(s), n) }

// Empty reports a summary with nothing in it.
func (s ProjectSummary) Empty() bool { return s == ProjectSummary{} }

// NeedsCredentials is seed 004's "auth credentials if step involves
// login": a step whose name, title or prompt speaks of logging in, signing
// in or up, auth, a password or credentials.
func NeedsCredentials(step Step) bool {
	return loginWords.MatchString(step.Name + "\n" + step.Title + "\n" + step.Prompt)
}

// For renders the summary for one step: one "Key: value" line per field,
// the credentials only when the step needs them (NeedsCredentials). It is
// untrusted text from the project document; StepMessage quotes it.
func (s ProjectSummary) For(step Step) string {
	s = s.withoutURLCredentials() // also a summary read back from context.json
	var lines []string
	add := func(key, value string) {
		if value = clean(value); value != "" {
			lines = append(lines, key+": "+value)
		}
	}
	add("Project", s.Project)
	add("App type", s.AppType)
	add("Base URL", s.BaseURL)
	if NeedsCredentials(step) {
		add("Credentials", s.Credentials)
	}
	add("Stack", s.Stack)
	add("Overview", s.Overview)
	return strings.Join(lines, "\n")
}
