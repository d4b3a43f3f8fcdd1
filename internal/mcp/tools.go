package mcpserver

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools' schemas are written out rather than derived from Go types: they
// are what the model reads, so every description counts, and the bridge, not
// the SDK, validates the arguments, so that a bad question comes back with
// the seam's code (EMPTY_QUESTIONS, INVALID_REQUEST, BAD_INTENT). The
// top-level properties of an input schema are what its handler reads, and
// what a refusal names as what the tool takes (takes); additionalProperties
// stays open, and other arguments are ignored.

const instructions = `These tools reach a person (on Slack, Discord or another surface of askbridge) and wait for their reply, which can take minutes. ` +
	`Use ask_user_question when you need a decision or information only a person can give, and request_approval before a tool call that needs a person's consent. ` +
	`If a call fails with a timeout, call it again with exactly the same arguments: it re-attaches to the question already asked instead of asking twice.`

var askTool = &mcp.Tool{
	Name:  "ask_user_question",
	Title: "Ask the user",
	Description: `Ask a person one or more questions and wait for their answer.

Each question has an id (yours, echoed in the answer), the question, an optional short header, optional markdown detail and optional options. With options the person picks one (several with multi_select) and may add free text; without options they answer in free text. End the label of the option you recommend with " (Recommended)".

The result is JSON, one item per question in request order:
{"answers":[{"id":"deploy","selected":["Yes (Recommended)"]},{"id":"why","selected":[],"custom":"free text"}]}
"selected" holds the chosen labels verbatim; "custom" is the person's own text. A skipped question has "selected": [] and no "custom".

If the person declines to answer the call fails with ASK_CANCELLED; if nobody answers in time, ASK_TIMED_OUT. If the call times out on your side, call again with the same arguments to keep waiting for the same question.`,
	InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "questions": {
      "type": "array",
      "description": "The questions, shown to the person together (at most 20).",
      "minItems": 1,
      "maxItems": 20,
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string", "description": "Your id for the question, unique in this call; the answer carries it."},
          "question": {"type": "string", "description": "The question, as a complete sentence."},
          "header": {"type": "string", "description": "Optional short heading, a few words."},
          "detail": {"type": "string", "description": "Optional markdown shown with the question: context, a plan to review, a summary of changes."},
          "options": {
            "type": "array",
            "description": "Optional choices. Omit them to ask for free text.",
            "items": {
              "type": "object",
              "properties": {
                "label": {"type": "string", "description": "The choice as the person sees it; the answer carries it verbatim. Unique in the question."},
                "description": {"type": "string", "description": "Optional explanation shown under the label."}
              },
              "required": ["label"]
            }
          },
          "multi_select": {"type": "boolean", "description": "Let the person pick several options. Default false: one."}
        },
        "required": ["id", "question"]
      }
    }
  },
  "required": ["questions"]
}`),
	OutputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "answers": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string"},
          "selected": {"type": "array", "items": {"type": "string"}},
          "custom": {"type": "string"}
        },
        "required": ["id", "selected"]
      }
    }
  },
  "required": ["answers"]
}`),
	Annotations: &mcp.ToolAnnotations{Title: "Ask the user", OpenWorldHint: ptr(true), DestructiveHint: ptr(false)},
}

var approvalTool = &mcp.Tool{
	Name:  "request_approval",
	Title: "Request approval",
	Description: `Ask a person to allow or reject a tool call before you make it, and wait for their decision.

The result is JSON: {"outcome":"allowed-once"} or {"outcome":"rejected","note":"why, from the person"}. Make the call only on "allowed-once", and only once; after "rejected", don't make it, and take the note into account.

If the person dismisses the request the call fails with ASK_CANCELLED; if nobody decides in time, ASK_TIMED_OUT. If the call times out on your side, call again with the same arguments to keep waiting for the same decision.`,
	InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "tool_name": {"type": "string", "description": "The tool you want to call."},
    "reason": {"type": "string", "description": "Why you want to call it, for the person who decides."},
    "arguments": {"type": "object", "description": "The arguments you would call it with."}
  },
  "required": ["tool_name"]
}`),
	OutputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "outcome": {"type": "string", "enum": ["allowed-once", "rejected"]},
    "note": {"type": "string"}
  },
  "required": ["outcome"]
}`),
	Annotations: &mcp.ToolAnnotations{Title: "Request approval", OpenWorldHint: ptr(true), DestructiveHint: ptr(false)},
}

func ptr[T any](v T) *T { return &v }
