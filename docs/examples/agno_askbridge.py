#!/usr/bin/env python3
"""Answer Agno's human-in-the-loop pauses through askbridge.

Python standard library only: it talks to the bridge's HTTP API (docs/api.md)
and works on Agno's objects (ToolExecution, RunRequirement) or on their
to_dict() form alike, so it runs with or without Agno installed.
docs/agno.md explains the mapping.

In an Agno program, with this file copied next to it (or its directory on
PYTHONPATH):

    from agno_askbridge import Bridge, resolve_paused

    bridge = Bridge(os.environ["BRIDGE_SERVER"], os.environ.get("BRIDGE_TOKEN"), expires_in="30m")
    run = agent.run("Email the Q3 report")
    while run.is_paused:
        resolve_paused(bridge, run)          # asks people, fills in the answers
        run = agent.continue_run(run_id=run.run_id, requirements=run.requirements)

resolve_paused blocks until people answer: in async code, run it with
`await asyncio.to_thread(resolve_paused, bridge, run)`.

As a script it is a self-test of the mapping against a real bridge (CI runs
it): it asks Agno-shaped requests, plays the person through the answer API,
and checks what comes back.

    python3 agno_askbridge.py --demo --server http://127.0.0.1:8080
    python3 agno_askbridge.py --demo --start-bridge ./bridge    # runs `bridge serve` itself

Each run asks under tool_call_ids of its own, so it can be repeated against
the same bridge (--runs 2 does, as CI does).

Environment: BRIDGE_SERVER (default of --server), BRIDGE_TOKEN (the agent's
token, ask scope), BRIDGE_ANSWER_TOKEN (the demo person's, answer scope;
neither is needed for an open bridge).
"""

import argparse
import collections
import datetime
import http.client
import http.server
import inspect
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import types
import typing
import urllib.error
import urllib.parse
import urllib.request

# What a UserInputField's field_type asks for (_field_spec): kind, the
# Python value the answer becomes (str, int, float, bool, list, dict, or
# choice: one of a Literal's values); optional, whether None is a value of
# it (Optional[X], X | None), so that the person may leave it blank;
# choices, a Literal's values.
_FieldSpec = collections.namedtuple("_FieldSpec", "kind optional choices")

# A kind -> the bridge's input.type. list and dict are asked as text and
# parsed as JSON; a choice is asked with its values as options.
INPUT_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "list": "string", "dict": "string"}

# The names UserInputField.to_dict() writes (field_type.__name__) -> kind:
# typing.List[str] is "List" and Dict[str, int] "Dict". Any other name
# ("Optional", "Union", "Literal", a class's) is asked as text, since what
# it stood for is lost.
_KIND_NAMES = {"str": "str", "int": "int", "float": "float", "bool": "bool", "list": "list", "dict": "dict",
               "List": "list", "Dict": "dict"}

# The bridge's limits on a question's options (docs/api.md).
MAX_OPTIONS, MAX_LABEL_LEN = 100, 200


# How a question that ends unanswered is told to an Agno program. The
# bridge's own words are the DeepSeek harness's ("the user cancelled
# ask_user_question"), naming a tool an Agno program never called; an
# approval's ("the user dismissed the approval request") are kept.
_QUESTION_ENDS = {
    "ASK_CANCELLED": "the user dismissed the question",
    "ASK_TIMED_OUT": "the question timed out before the user answered",
    "ASK_ABORTED": "the question was withdrawn before the user answered",
}


class BridgeError(Exception):
    """An error of the bridge: code (NO_PROVIDER, ASK_CANCELLED, ...) and message."""

    def __init__(self, code, message, status=None):
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.status = code, message, status


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are not followed: urllib would turn a POST into a GET (of
    the request list, refused as if the token were wrong) and send the token
    to wherever a redirect points. Bridge.call names the URL to use instead."""

    def redirect_request(self, *args):
        return None


_opener = urllib.request.build_opener(_NoRedirect)


class Bridge:
    """A minimal client of the bridge's v1 API. expires_in, when given, is
    how long each request it asks waits for a person before it expires
    (ASK_TIMED_OUT): a Go duration ("30m") or a number of seconds, as
    docs/api.md has it; without it the bridge's default applies (the
    route's expires_in, then store.default_expires_in: 24 h)."""

    def __init__(self, server, token=None, poll_wait=25, retry_for=120, expires_in=None):
        self.server = server.rstrip("/")
        self.token = token
        self.poll_wait = poll_wait
        self.retry_for = retry_for
        self.expires_in = expires_in
        self.answered = False  # an HTTP response came: a hang-up is then a bridge stopping

    def call(self, method, path, body=None, wait=0):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with _opener.open(req, timeout=wait + 30) as resp:
                self.answered = True
                raw = resp.read()
        except http.client.IncompleteRead as e:  # the connection broke mid-answer
            raise ConnectionError(f"the answer was cut off: {e!r}") from None
        except urllib.error.HTTPError as e:
            self.answered = True
            if 300 <= e.code < 400:
                to = urllib.parse.urljoin(req.full_url, e.headers.get("Location", ""))
                to = urllib.parse.urlsplit(to)._replace(query="", fragment="").geturl()
                asked = urllib.parse.urlsplit(path).path
                use = f"use {to[: -len(asked)]} as the bridge's URL" if to.endswith(asked) else "use the URL the bridge answers at itself"
                raise BridgeError("HTTP_%d" % e.code, f"{self.server} redirects {method} {asked} to {to}: {use}", e.code) from None
            try:
                err = json.load(e)["error"]
            except (ValueError, KeyError, TypeError):
                err = {"code": "HTTP_%d" % e.code, "message": e.reason}
            raise BridgeError(err["code"], err["message"], e.code) from None
        except ConnectionResetError:  # closed before answering (RemoteDisconnected is one): an OSError, ridden out
            if not self.answered and self._closes_again():  # unless what is there is no bridge
                raise BridgeError("BAD_RESPONSE", f"{self.server} closed the connection without an HTTP response to {method} {path}, "
                                  "and so it did to a GET /healthz sent to check: no bridge, nor a proxy in front of one (a database, "
                                  "say); Bridge's server (BRIDGE_SERVER, or --server for the script) says where the bridge is") from None
            raise
        except http.client.HTTPException as e:  # something that does not speak HTTP (ssh, a typo'd port)
            raise BridgeError("BAD_RESPONSE", f"{self.server} answered {method} {path} with something other than HTTP ({e!r}): is it the bridge?") from None
        try:
            return json.loads(raw)
        except ValueError:
            raise BridgeError("BAD_RESPONSE", f"{self.server} answered {method} {path} with something other than JSON: is it the bridge?") from None

    def _closes_again(self):
        """Whether the server, which closed a call's connection without a
        response before anything there answered in HTTP, closes a GET of
        /healthz (no token needed) too, or answers it in something other than
        HTTP, as a database does. A bridge that stopped is gone (refused) or
        back (it answers), as the Go client tells them apart."""
        try:
            _opener.open(self.server + "/healthz", timeout=5).close()
        except urllib.error.HTTPError as e:
            e.close()
        except (ConnectionResetError, http.client.HTTPException):
            return True
        except OSError:  # refused, or no answer in time: a bridge stopping or starting
            return False
        self.answered = True
        return False

    def ask(self, kind, body):
        """Create a request (kind "questions" or "approvals") and wait until it
        ends. Returns the record when answered; raises BridgeError with the
        seam's code otherwise. The same tool_call_id and body re-attach to the
        request already made, so a restarted agent does not ask twice, and a
        create with one is retried like the waits. The Bridge's expires_in
        goes in a body that gives none."""
        path = f"/v1/{kind}"
        if self.expires_in is not None:
            body = {"expires_in": self.expires_in, **body}
        if body.get("tool_call_id"):
            rec = self._riding_out(lambda: self.call("POST", path, body))
        else:  # a create sent again might ask twice
            rec = self._riding_out(lambda: self.call("POST", path, body), retry=False)
        while rec["status"] == "pending":
            wait = f"{path}/{urllib.parse.quote(rec['id'])}?wait={self.poll_wait}s"
            started = time.monotonic()
            rec = self._riding_out(lambda: self.call("GET", wait, wait=self.poll_wait))
            if rec["status"] == "pending":
                # A bridge that holds no call (store.max_wait: 0) answers at
                # once: poll it at most once a second, as the Go client does.
                time.sleep(max(0, min(self.poll_wait, 1) - (time.monotonic() - started)))
        if rec["status"] != "answered":
            err = rec.get("error") or {"code": rec["status"].upper(), "message": rec["status"]}
            raise BridgeError(err["code"], _QUESTION_ENDS.get(err["code"], err["message"]) if kind == "questions" else err["message"])
        return rec

    def _riding_out(self, call, retry=True):
        """Make call, riding out a restarting bridge (no connection, an answer
        cut off, 503 UNAVAILABLE, 429, or a proxy's 502 or 504 in front of it) for
        up to retry_for seconds; then, or at once without retry, BridgeError
        ASKBRIDGE_UNREACHABLE. Other errors (NO_PROVIDER among them, though
        also a 503) are raised at once."""
        failing_since = None
        while True:
            try:
                return call()
            except BridgeError as e:
                if e.status not in (429, 502, 503, 504) or e.code == "NO_PROVIDER":
                    raise
                why = f"{e.code}: {e.message}"
            except (urllib.error.URLError, OSError) as e:
                # Nothing answered at all: say what to check, as the bridge CLI does.
                why = str(getattr(e, "reason", e)) + ("; is `bridge serve` running there? Bridge's server "
                                                     "(BRIDGE_SERVER, or --server for the script) says where it is")
            failing_since = failing_since or time.monotonic()
            if not retry or time.monotonic() - failing_since > self.retry_for:
                raise BridgeError("ASKBRIDGE_UNREACHABLE", f"askbridge at {self.server}: {why}") from None
            time.sleep(1)


# --- Agno's shapes -----------------------------------------------------------


def _get(obj, name, default=None):
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


def _set(obj, name, value):
    if isinstance(obj, dict):
        obj[name] = value
    else:
        setattr(obj, name, value)


def _field_spec(field_type):
    """What a UserInputField's field_type asks for, a _FieldSpec. Agno's
    field_type is the parameter's type hint as written (typing.List[str],
    Optional[int], Literal["a", "b"], int | None); once serialised with
    to_dict(), its __name__ ("List", "Optional", "Literal")."""
    if isinstance(field_type, str):
        return _FieldSpec(_KIND_NAMES.get(field_type, "str"), field_type == "Optional", None)
    origin, args = typing.get_origin(field_type), typing.get_args(field_type)
    if origin is typing.Union or origin is getattr(types, "UnionType", None):  # Optional[X], X | None
        members = [a for a in args if a is not type(None)]
        spec = _field_spec(members[0]) if len(members) == 1 else _FieldSpec("str", False, None)
        return spec._replace(optional=len(members) < len(args))
    if origin is typing.Literal:
        return _FieldSpec("choice", False, args)
    if origin in (list, dict):  # typing.List[str], list[str], Dict[str, int], dict[str, int]
        return _FieldSpec(origin.__name__, False, None)
    return _FieldSpec(_KIND_NAMES.get(getattr(field_type, "__name__", None), "str"), False, None)


def _choice_label(value):
    return value if isinstance(value, str) else str(value)


def _option_labels(spec):
    """The option labels of a choice's values, or None when they can't all
    be labels (empty, too long, too many, two alike): the field is then
    asked as text, checked against them."""
    if spec.kind != "choice":
        return None
    labels = [_choice_label(v) for v in spec.choices]
    usable = all(0 < len(label) <= MAX_LABEL_LEN for label in labels) and len(set(labels)) == len(labels)
    return labels if usable and 0 < len(labels) <= MAX_OPTIONS else None


def _one_of(spec):
    return "one of " + ", ".join(json.dumps(_choice_label(v), ensure_ascii=False) for v in spec.choices)


def _prefill(value):
    # The bridge takes a JSON string, number or boolean as input.value.
    return value if isinstance(value, (str, int, float, bool)) else json.dumps(value)


def _tool_and_fields(target):
    """The ToolExecution of target (a RunRequirement or the tool itself) and
    the user_input_schema to fill."""
    tool = _get(target, "tool_execution") or target
    return tool, _get(target, "user_input_schema") or _get(tool, "user_input_schema") or []


def _feedback_schema(target):
    """The user_feedback_schema (UserFeedbackQuestions) of target, a
    RunRequirement or the ToolExecution of an ask_user call."""
    tool = _get(target, "tool_execution") or target
    return _get(target, "user_feedback_schema") or _get(tool, "user_feedback_schema") or []


def _schema_copies(target, name):
    """Every list target holds under name (user_input_schema or
    user_feedback_schema): a RunRequirement has its own and its tool's, one
    list until from_dict() rebuilds them as two; continue_run reads the
    tool's, the requirement's needs_* read its own."""
    tool = _get(target, "tool_execution") or target
    copies = []
    for holder in (target, tool):
        schema = _get(holder, name)
        if schema is not None and not any(schema is c for c in copies):
            copies.append(schema)
    return copies


# The pauses a RunRequirement reports (its needs_* properties), in the order
# Agno's pause_type ranks them: a call of the ask_user tool also
# requires_user_input, but is answered as user feedback.
PAUSE_KINDS = ("user_feedback", "external_execution", "user_input", "confirmation")


def _needs(target, kind):
    """Whether target (a RunRequirement, its to_dict() form, or a
    ToolExecution) still needs kind: its needs_<kind> property where Agno
    has one, otherwise read off its tool the way that property reads it
    (agno/run/requirement.py)."""
    value = _get(target, "needs_" + kind)
    if value is not None:
        return bool(value)
    tool = _get(target, "tool_execution") or target
    answered = _get(tool, "answered") is True
    if kind == "user_feedback":
        return not answered and any(_get(q, "selected_options") is None for q in _feedback_schema(target))
    if kind == "user_input":
        return not answered and bool(_get(tool, "requires_user_input"))
    if kind == "confirmation":
        return (_get(target, "confirmation") is None and _get(tool, "confirmed") is None
                and bool(_get(tool, "requires_confirmation")))
    return (_get(target, "external_execution_result") is None and _get(tool, "result") is None
            and bool(_get(tool, "external_execution_required")))


def _pause_kind(target):
    """The first of PAUSE_KINDS target needs, or None. A call with a
    user_feedback_schema is user feedback, as Agno's pause_type has it, even
    once its questions hold selections: it still requires_user_input until
    it is marked answered."""
    kind = next((kind for kind in PAUSE_KINDS if _needs(target, kind)), None)
    return "user_feedback" if kind == "user_input" and _feedback_schema(target) else kind


def _takes(method, parameter):
    try:
        return parameter in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def user_input_request(target, review_filled=False):
    """The question request for a tool call that requires_user_input (its
    RunRequirement, or its ToolExecution).

    One question per field of user_input_schema whose value is None; the
    fields the agent filled are shown in the detail. With review_filled the
    person also sees those as optional fields prefilled with the agent's
    values, to keep or correct. A field is a typed input as its field_type
    says (_field_spec), not required when None is a value of it; a Literal
    is asked as a choice among its values."""
    tool, fields = _tool_and_fields(target)
    tool_name = _get(tool, "tool_name") or "tool"
    filled = [f for f in fields if _get(f, "value") is not None]
    questions = []
    for f in fields:
        value = _get(f, "value")
        if value is not None and not review_filled:
            continue
        name = _get(f, "name")
        spec = _field_spec(_get(f, "field_type"))
        question = {"id": name, "question": _get(f, "description") or f"{name}?", "header": tool_name[:100]}
        labels = _option_labels(spec)
        if labels:  # a typed input can't have options: a question with options is the bridge's choice
            question["options"] = [{"label": label} for label in labels]
        else:
            question["input"] = {"type": INPUT_TYPES.get(spec.kind, "string")}
            if value is not None:
                question["input"]["value"] = _prefill(value)
            elif not spec.optional:
                question["input"]["required"] = True
        questions.append(question)
    if not questions:
        return None
    if filled and not review_filled:
        questions[0]["detail"] = f"`{tool_name}` is called with:\n" + "\n".join(
            f"- **{_get(f, 'name')}**: {json.dumps(_get(f, 'value'), ensure_ascii=False)}" for f in filled)
    body = {"questions": questions}
    if _get(tool, "tool_call_id"):
        body["tool_call_id"] = f"agno:{_get(tool, 'tool_call_id')}:input"
    return body


def parse_input(text, field_type):
    """The bridge's answer text (canonical: booleans are true/false) as the
    value field_type asks for (_field_spec). Raises ValueError, saying what
    to write instead, for a list or dict that is not one in JSON and for a
    choice that is none of its values: the bridge checks integers, numbers
    and booleans, but takes lists and dicts as plain text, and offers free
    text beside a choice's options."""
    spec = _field_spec(field_type)
    if spec.kind == "choice":
        for value in spec.choices:
            if text == _choice_label(value):
                return value
        raise ValueError("not " + _one_of(spec))
    if spec.kind == "int":
        return int(text)
    if spec.kind == "float":
        return float(text)
    if spec.kind == "bool":
        return text == "true"
    if spec.kind in ("list", "dict"):
        shape = '["a", "b"]' if spec.kind == "list" else '{"key": "value"}'
        try:
            value = json.loads(text)
        except ValueError as e:
            raise ValueError(f"not JSON ({e}); write it as {shape}") from None
        if not isinstance(value, list if spec.kind == "list" else dict):
            raise ValueError(f"not a JSON {'list' if spec.kind == 'list' else 'object'}; write it as {shape}")
        return value
    return text


def apply_answer(target, answer):
    """Write an answer into the user_input_schema values of target (a
    RunRequirement, or a ToolExecution), as continue_run reads them: it
    copies each field's value of the tool's schema into tool_args. Uses the
    requirement's provide_user_input() where Agno has one, writes both
    copies of the schema either way, and marks the tool answered once every
    field has a value, or is optional (which is what provide_user_input
    does, optional fields aside; without it the requirement's
    needs_user_input stays true, so Agno still counts the pause among
    run.active_requirements). A question left blank keeps the agent's value
    (a reviewed field), or None (an optional one). Returns the fields whose
    answer could not be used, {name: (text, why)}: text that did not parse,
    or no choice for a required one; those keep their value."""
    by_id = {a["id"]: a for a in answer["answers"]}
    tool, fields = _tool_and_fields(target)
    values, bad = {}, {}
    for f in fields:
        name, spec, item = _get(f, "name"), _field_spec(_get(f, "field_type")), by_id.get(_get(f, "name"))
        if item is None:
            continue
        text = item.get("custom")
        if text is None and item.get("selected"):  # an option of a choice
            text = item["selected"][0]
        if text is not None:
            try:
                values[name] = parse_input(text, _get(f, "field_type"))
            except ValueError as e:
                bad[name] = (text, str(e))
        elif _get(f, "value") is None and not spec.optional:  # the bridge can't require a choice
            bad[name] = ("", "nothing was chosen; choose " + _one_of(spec))
    provide = getattr(target, "provide_user_input", None)
    if values and callable(provide) and _needs(target, "user_input"):
        provide(values)
    for schema in _schema_copies(target, "user_input_schema"):
        for f in schema:
            if _get(f, "name") in values:
                _set(f, "value", values[_get(f, "name")])
    if fields and all(_get(f, "value") is not None or _field_spec(_get(f, "field_type")).optional for f in fields):
        _set(tool, "answered", True)
    return bad


def reask_request(body, bad, attempt):
    """The request that asks again for the fields of body whose answers
    could not be used (bad, {name: (text, why)}), saying why. Its
    tool_call_id is body's with the attempt appended: a new request, since
    under the old id the bridge returns the answered one, and the same one
    after a restart."""
    questions = []
    for q in body["questions"]:
        if q["id"] in bad:
            text, why = bad[q["id"]]
            detail = f"{json.dumps(text, ensure_ascii=False)} could not be used: {why}." if text else f"{why[:1].upper()}{why[1:]}."
            questions.append({**q, "detail": detail})
    out = {"questions": questions}
    if body.get("tool_call_id"):
        out["tool_call_id"] = f"{body['tool_call_id']}:{attempt + 1}"
    return out


def approval_request(tool, reason=None):
    """The approval request for a ToolExecution that requires_confirmation."""
    body = {"tool_name": _get(tool, "tool_name") or "tool", "arguments": _get(tool, "tool_args") or {}}
    if reason:
        body["reason"] = reason
    if _get(tool, "tool_call_id"):
        body["tool_call_id"] = f"agno:{_get(tool, 'tool_call_id')}:confirm"
    return body


def apply_decision(target, decision):
    """allowed-once confirms the tool call; rejected rejects it, with the
    person's note as confirmation_note. target is a RunRequirement, whose
    confirm() and reject() are used where it needs a confirmation
    (reject(note) where Agno's takes a note, as newer versions' does), or a
    ToolExecution. Either way the tool's confirmed and confirmation_note are
    set: continue_run runs the tool only if confirmed is True, and
    otherwise rejects it with that note."""
    allowed = decision["outcome"] == "allowed-once"
    note = decision.get("note")
    tool = _get(target, "tool_execution") or target
    confirm, reject = getattr(target, "confirm", None), getattr(target, "reject", None)
    if callable(confirm) and callable(reject) and _needs(target, "confirmation"):
        if allowed:
            confirm()
        elif _takes(reject, "note"):
            reject(note)
        else:
            reject()
    elif tool is not target:
        _set(target, "confirmation", allowed)
    _set(tool, "confirmed", allowed)
    for obj in (target, tool):
        _set(obj, "confirmation_note", note)


def confirm_tool(bridge, target, reason=None):
    """Ask for approval of a tool call and apply the decision. A request that
    ends without a decision (dismissed, expired) rejects the call: the tool
    must not run without a person's yes."""
    tool = _get(target, "tool_execution") or target
    try:
        decision = bridge.ask("approvals", approval_request(tool, reason))["decision"]
    except BridgeError as e:
        if e.code not in ("ASK_CANCELLED", "ASK_TIMED_OUT"):
            raise
        decision = {"outcome": "rejected", "note": e.message}
    apply_decision(target, decision)
    return decision


def fill_tool(bridge, target, review_filled=False, attempts=3):
    """Ask for the missing input fields of a tool call (its RunRequirement or
    ToolExecution) and fill them in. A list or dict answered with text that
    is not JSON is asked again, saying why, up to attempts times in all;
    then BridgeError INVALID_ANSWER. A call with nothing to ask is marked
    answered all the same."""
    body = user_input_request(target, review_filled)
    if body is None:
        apply_answer(target, {"answers": []})
        return
    for attempt in range(1, attempts + 1):
        bad = apply_answer(target, bridge.ask("questions", body)["answer"])
        if not bad:
            return
        body = reask_request(body, bad, attempt)
    raise BridgeError("INVALID_ANSWER", "; ".join(f"{k}: {json.dumps(t)} ({why})" for k, (t, why) in bad.items()))


def _feedback_id(index):
    # A UserFeedbackQuestion is named by its text, which need not be unique
    # nor fit a question id: the bridge's questions are named by position.
    return f"q{index + 1}"


def feedback_request(target):
    """The question request for a call of Agno's ask_user tool (its
    RunRequirement, which needs_user_feedback, or its ToolExecution).

    One question per UserFeedbackQuestion not yet answered (selected_options
    None), with its header, its options and their descriptions, and single
    or multi-select as Agno says; one without options is asked as free
    text."""
    tool = _get(target, "tool_execution") or target
    tool_name = _get(tool, "tool_name") or "tool"
    questions = []
    for i, q in enumerate(_feedback_schema(target)):
        if _get(q, "selected_options") is not None:
            continue
        question = {"id": _feedback_id(i), "question": _get(q, "question") or f"{tool_name}?",
                    "header": (_get(q, "header") or tool_name)[:100]}
        options = _get(q, "options") or []
        if options:
            question["options"] = [{"label": _get(o, "label"), **({"description": _get(o, "description")} if _get(o, "description") else {})}
                                   for o in options]
            question["multi_select"] = bool(_get(q, "multi_select"))
        questions.append(question)
    if not questions:
        return None
    body = {"questions": questions}
    if _get(tool, "tool_call_id"):
        body["tool_call_id"] = f"agno:{_get(tool, 'tool_call_id')}:feedback"
    return body


def apply_feedback(target, answer):
    """Write the answer to a feedback_request back into target (a
    RunRequirement, or a ToolExecution) as continue_run reads it: it hands
    the model each question's selected_options. Those are the labels
    chosen, and a free-text answer (which the surfaces offer beside the
    options) as one more entry, so the model reads the person's own words;
    a skipped question selects nothing ([]). Each option's selected follows,
    and the tool is marked answered once every question has its selections.
    Uses the requirement's provide_user_feedback() where Agno has one, for
    the questions whose text no other question has (it names questions by
    their text), and writes both copies of the schema by position either
    way."""
    tool = _get(target, "tool_execution") or target
    schema = _feedback_schema(target)
    by_id = {a["id"]: a for a in answer["answers"]}
    picked = {}
    for i in range(len(schema)):
        item = by_id.get(_feedback_id(i))
        if item is not None:
            picked[i] = list(item.get("selected") or []) + ([item["custom"]] if item.get("custom") else [])
    # Agno's provide_user_feedback takes {question text: labels} and writes
    # them into every question with that text: a text two questions share
    # goes in by position only, below.
    texts = [_get(q, "question") for q in schema]
    by_text = {texts[i]: labels for i, labels in picked.items() if texts.count(texts[i]) == 1}
    provide = getattr(target, "provide_user_feedback", None)
    if by_text and callable(provide) and _needs(target, "user_feedback"):
        provide(by_text)
    for copy in _schema_copies(target, "user_feedback_schema"):
        for i, labels in picked.items():
            if i < len(copy):
                _set(copy[i], "selected_options", list(labels))
                for option in _get(copy[i], "options") or []:
                    _set(option, "selected", _get(option, "label") in labels)
    if schema and all(_get(q, "selected_options") is not None for q in schema):
        _set(tool, "answered", True)


def fill_feedback(bridge, target):
    """Ask the questions of an ask_user call (its RunRequirement or
    ToolExecution) and write the person's selections back. A call with
    nothing to ask is marked answered all the same."""
    body = feedback_request(target)
    apply_feedback(target, bridge.ask("questions", body)["answer"] if body else {"answers": []})


def _open_requirements(run):
    """Agno 2's run.active_requirements; for a RunOutput in its to_dict()
    form, those of its requirements that still need something. None for
    versions before RunRequirement, which list the paused tools instead."""
    active = _get(run, "active_requirements")
    if active is not None:
        return list(active)
    requirements = _get(run, "requirements")
    if requirements is None:
        return None
    return [r for r in requirements if _pause_kind(r) is not None]


def resolve_paused(bridge, run):
    """Resolve every pause of a paused Agno run through the bridge: Agno 2's
    run.active_requirements, or the tools of older versions. User feedback
    (the ask_user tool) becomes a question request with options, user input
    one with typed fields, a confirmation an approval request.

    A requirement of another kind (an external execution, or a kind of
    pause newer than this module) raises ValueError, naming it, before
    anything is asked: left unresolved, it would pause the continued run
    again, and a `while run.is_paused` loop would never end. Resolve such
    requirements yourself first. So does a call of an @approval tool
    (approval_type "required"): with a db, Agno's continue_run waits for
    its own approval record, which an answer through the bridge does not
    resolve (see docs/agno.md)."""
    resolvers = {"user_feedback": fill_feedback, "user_input": fill_tool, "confirmation": confirm_tool}
    requirements = _open_requirements(run)
    if requirements is not None:
        pauses = [(req, _pause_kind(req)) for req in requirements]
    else:  # before RunRequirement: the paused tools themselves
        pauses = [(tool, "user_feedback" if _feedback_schema(tool) else "user_input")
                  for tool in _get(run, "tools_requiring_user_input") or []]
        pauses += [(tool, "confirmation") for tool in _get(run, "tools_requiring_confirmation") or []]
    for target, kind in pauses:
        tool = _get(target, "tool_execution") or target
        name = _get(tool, "tool_name") or "a tool"
        if kind not in resolvers:
            raise ValueError(f"askbridge: the run is paused on {name} for {(kind or 'something').replace('_', ' ')}, "
                             "not user input, user feedback or a confirmation, which resolve_paused does not resolve; "
                             "resolve it first")
        if _get(tool, "approval_type") == "required":
            raise ValueError(f"askbridge: the run is paused on {name}, an @approval tool (approval_type \"required\"): "
                             "Agno's continue_run waits for its own approval record, which an answer through the bridge "
                             f"does not resolve, so resolve_paused does not ask it; declare the tool with "
                             f"@tool({_plain_flag(kind)}=True) instead of @approval, or resolve the approval through Agno")
    for target, kind in pauses:
        resolvers[kind](bridge, target)


def _plain_flag(kind):
    """The @tool flag that pauses for kind without @approval."""
    return {"user_input": "requires_user_input", "user_feedback": "requires_user_input"}.get(kind, "requires_confirmation")


# --- the self-test (--demo) --------------------------------------------------


class _DemoAgent(Bridge):
    """The demo's agent: a Bridge that keeps the tool_call_ids of its
    requests still pending, so that the demo can withdraw them when it
    fails or runs out of time, rather than leave questions posted that
    nobody will answer. Agents made with pending=another's share them."""

    def __init__(self, server, token=None, pending=None, **kwargs):
        super().__init__(server, token, **kwargs)
        self.pending = set() if pending is None else pending  # {(collection path, tool_call_id)}

    def call(self, method, path, body=None, wait=0):
        collection = "/".join(path.split("?")[0].split("/")[:3])  # /v1/questions or /v1/approvals
        if method == "POST" and collection == path and (body or {}).get("tool_call_id"):
            self.pending.add((collection, body["tool_call_id"]))  # before it is sent: one on its way is withdrawn too
        rec = super().call(method, path, body, wait)
        if isinstance(rec, dict) and rec.get("tool_call_id") and rec.get("status", "pending") != "pending":
            self.pending.discard((collection, rec["tool_call_id"]))
        return rec

    def withdraw_pending(self, also=()):
        """Withdraw (DELETE by tool_call_id) the requests still pending, and
        those named in also, (collection path, tool_call_id) pairs: a request
        not created yet is withdrawn before its create lands. Returns the
        tool_call_ids withdrawn; a bridge that can't be reached withdraws
        nothing."""
        withdrawn = []
        for collection, tool_call_id in sorted(set(self.pending) | set(also)):
            try:
                rec = self.call("DELETE", f"{collection}?tool_call_id={urllib.parse.quote(tool_call_id)}")
            except (BridgeError, OSError):
                continue
            if rec.get("status") == "cancelled":
                withdrawn.append(tool_call_id)
        return withdrawn


def _person(person, kind, tool_call_id, respond, patience, done):
    """Play the person: poll the bridge until the request with tool_call_id
    is pending, then respond to it. Returns what went wrong, or None: the
    bridge refused to list requests, respond raised, the request did not
    turn up within patience seconds, or the agent was done (done set)
    without asking it."""
    deadline = time.monotonic() + patience
    try:
        while not done.is_set():
            pending = person.call("GET", f"/v1/{kind}?status=pending")[kind]
            mine = [r for r in pending if r.get("tool_call_id") == tool_call_id]
            if mine:
                respond(mine[0])
                return None
            if time.monotonic() > deadline:
                return f"no pending {kind} with tool_call_id {tool_call_id} turned up within {patience:g} s"
            done.wait(0.02)
    except Exception as e:
        return f"the person failed on {tool_call_id}: {e}"
    return f"the agent was done without asking {tool_call_id}"


def _play(agent, person, asks, resolve, patience=20):
    """Run resolve (the agent's side, asking through agent, a _DemoAgent)
    while the person answers asks, a list of (kind, tool_call_id, respond),
    each in a thread of its own. When the person fails at any step, the
    agent's requests are withdrawn, so that its wait ends at once rather
    than when the request expires; what went wrong is raised as an
    AssertionError."""
    errors, done = [], threading.Event()

    def answer(kind, tool_call_id, respond):
        error = _person(person, kind, tool_call_id, respond, patience, done)
        if error:
            errors.append(error)
            agent.withdraw_pending(also=[(f"/v1/{k}", tc) for k, tc, _ in asks])

    threads = [threading.Thread(target=answer, args=ask, daemon=True) for ask in asks]
    for t in threads:
        t.start()
    try:
        resolve()
    except BridgeError as e:
        errors.append(f"the agent's ask failed: {e}")
    finally:
        done.set()
        for t in threads:
            t.join()
    if errors:
        raise AssertionError("; ".join(errors))


def _within(seconds, agent, work):
    """Run work (the demo) and wait for it for up to seconds; then withdraw
    every request agent (a _DemoAgent) still has pending and raise
    TimeoutError naming them. work runs in a daemon thread, which a
    program that exits leaves behind."""
    outcome = []

    def run():
        try:
            work()
            outcome.append(None)
        except BaseException as e:  # raised below, in the caller's thread
            outcome.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        waiting = agent.withdraw_pending()
        raise TimeoutError(f"not done within {seconds:g} s; withdrew what it was waiting for: {', '.join(waiting) or 'nothing'}")
    if outcome[0] is not None:
        raise outcome[0]


class _Flaky:
    """Stands in front of the bridge at server as a restarting bridge and its
    proxy do: it answers the first calls with fails, in order ("503": 503
    UNAVAILABLE; "502": a proxy's HTML 502; "cut": an answer cut off;
    "html": a 200 that is a web page; "301": a redirect to the bridge;
    "401": a token refused; None: none, forwarded), forwards the rest, and
    counts each method's calls. With hide_pending, it lists no pending
    requests, so that what is asked through it stays pending; created holds
    the tool_call_ids of the creates it forwarded, and asked is set at the
    first."""

    def __init__(self, server, fails, hide_pending=False):
        self.server, self.fails, self.calls = server, list(fails), {}
        self.created, self.asked = [], threading.Event()
        flaky = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _any(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
                flaky.calls[self.command] = flaky.calls.get(self.command, 0) + 1
                fail = flaky.fails.pop(0) if flaky.fails else None
                if fail == "cut":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "100")
                    self.end_headers()
                    self.wfile.write(b'{"id": "q_')
                    self.close_connection = True
                    return
                kind = "application/json"
                if fail == "503":
                    status, out = 503, b'{"error":{"code":"UNAVAILABLE","message":"the bridge can\'t reach its Redis; try again shortly"}}'
                elif fail == "401":
                    status, out = 401, b'{"error":{"code":"UNAUTHORIZED","message":"the bearer token is not valid"}}'
                elif fail in ("502", "html"):
                    status, out, kind = (502 if fail == "502" else 200), b"<html><body>Bad Gateway</body></html>", "text/html"
                elif fail == "301":
                    self.send_response(301)
                    self.send_header("Location", flaky.server + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                elif hide_pending and "status=pending" in self.path:
                    status, out = 200, b'{"questions": [], "approvals": []}'
                else:
                    req = urllib.request.Request(flaky.server + self.path, data=body, method=self.command,
                                                 headers={k: v for k, v in self.headers.items() if k in ("Content-Type", "Authorization")})
                    try:
                        with urllib.request.urlopen(req, timeout=60) as resp:
                            status, out = resp.status, resp.read()
                    except urllib.error.HTTPError as e:
                        status, out = e.code, e.read()
                    if self.command == "POST" and self.path in ("/v1/questions", "/v1/approvals"):
                        flaky.created.append(json.loads(body).get("tool_call_id"))
                        flaky.asked.set()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_DELETE = _any

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


# Stand-ins for Agno's classes, so that the demo runs without Agno. They
# keep the human-in-the-loop fields and methods as agno-agi/agno's source
# has them: ToolExecution (agno/models/response.py), UserInputField,
# UserFeedbackOption and UserFeedbackQuestion (agno/tools/function.py) and
# RunRequirement (agno/run/requirement.py, the version with user feedback);
# _EarlyRequirement is an early Agno 2 RunRequirement, without
# provide_user_input, user feedback or a note for reject(). Left out: ids,
# timestamps, metrics, approval fields (the demo sets approval_type where it
# needs one), team-member fields, to_dict/from_dict.


class _Field:
    def __init__(self, name, field_type, description=None, value=None):
        self.name, self.field_type, self.description, self.value = name, field_type, description, value


class _Option:
    def __init__(self, label, description=None):
        self.label, self.description, self.selected = label, description, False


class _Question:
    def __init__(self, question, header=None, options=None, multi_select=False):
        self.question, self.header, self.options, self.multi_select = question, header, options, multi_select
        self.selected_options = None


class _Tool:
    def __init__(self, tool_call_id, tool_name, tool_args=None, requires_confirmation=None, requires_user_input=None,
                 user_input_schema=None, user_feedback_schema=None, external_execution_required=None):
        self.tool_call_id, self.tool_name, self.tool_args, self.result = tool_call_id, tool_name, tool_args, None
        self.requires_confirmation, self.confirmed, self.confirmation_note = requires_confirmation, None, None
        self.requires_user_input, self.user_input_schema, self.answered = requires_user_input, user_input_schema, None
        self.user_feedback_schema = user_feedback_schema
        self.external_execution_required = external_execution_required


class _Requirement:
    def __init__(self, tool_execution):
        self.tool_execution = tool_execution
        self.user_input_schema = tool_execution.user_input_schema
        self.user_feedback_schema = tool_execution.user_feedback_schema
        self.confirmation = self.confirmation_note = self.external_execution_result = None

    @property
    def needs_confirmation(self):
        if self.confirmation is not None or self.tool_execution.confirmed is not None:
            return False
        return self.tool_execution.requires_confirmation or False

    @property
    def needs_user_input(self):
        if self.tool_execution.answered is True:
            return False
        if self.tool_execution.requires_user_input:
            return True
        return bool(self.user_input_schema) and not all(f.value is not None for f in self.user_input_schema)

    @property
    def needs_user_feedback(self):
        if self.tool_execution.answered is True:
            return False
        return bool(self.user_feedback_schema) and not all(q.selected_options is not None for q in self.user_feedback_schema)

    @property
    def needs_external_execution(self):
        if self.external_execution_result is not None:
            return False
        return self.tool_execution.external_execution_required or False

    def confirm(self):
        if not self.needs_confirmation:
            raise ValueError("This requirement does not require confirmation")
        self.confirmation = self.tool_execution.confirmed = True

    def reject(self, note=None):
        if not self.needs_confirmation:
            raise ValueError("This requirement does not require confirmation")
        self.confirmation = self.tool_execution.confirmed = False
        self.confirmation_note = self.tool_execution.confirmation_note = note

    def provide_user_input(self, values):
        if not self.needs_user_input:
            raise ValueError("This requirement does not require user input")
        if self.user_input_schema:
            for schema in (self.user_input_schema, self.tool_execution.user_input_schema or []):
                for f in schema:
                    if f.name in values:
                        f.value = values[f.name]
            if all(f.value is not None for f in self.user_input_schema):
                self.tool_execution.answered = True

    def provide_user_feedback(self, selections):
        if not self.needs_user_feedback:
            raise ValueError("This requirement does not require user feedback")
        if self.user_feedback_schema:
            for schema in (self.user_feedback_schema, self.tool_execution.user_feedback_schema or []):
                for q in schema:
                    if q.question in selections:
                        q.selected_options = selections[q.question]
                        for option in q.options or []:
                            option.selected = option.label in q.selected_options
            if all(q.selected_options is not None for q in self.user_feedback_schema):
                self.tool_execution.answered = True

    def is_resolved(self):
        return not (self.needs_confirmation or self.needs_user_input or self.needs_user_feedback or self.needs_external_execution)


class _EarlyRequirement:
    def __init__(self, tool_execution):
        self.tool_execution = tool_execution
        self.user_input_schema = tool_execution.user_input_schema
        self.confirmation = self.confirmation_note = self.external_execution_result = None

    @property
    def needs_confirmation(self):
        if self.confirmation is not None:
            return False
        if self.tool_execution.confirmed is True:
            return True
        return self.tool_execution.requires_confirmation or False

    @property
    def needs_user_input(self):
        if self.tool_execution.answered is True:
            return False
        if self.user_input_schema and not all(f.value is not None for f in self.user_input_schema):
            return True
        return self.tool_execution.requires_user_input or False

    @property
    def needs_external_execution(self):
        if self.external_execution_result is not None:
            return True
        return self.tool_execution.external_execution_required or False

    def confirm(self):
        if not self.needs_confirmation:
            raise ValueError("This requirement does not require confirmation")
        self.confirmation = self.tool_execution.confirmed = True

    def reject(self):
        if not self.needs_confirmation:
            raise ValueError("This requirement does not require confirmation")
        self.confirmation = self.tool_execution.confirmed = False

    def is_resolved(self):
        return not (self.needs_confirmation or self.needs_user_input or self.needs_external_execution)


class _Run:
    """RunOutput's view of its requirements (agno/run/agent.py)."""

    def __init__(self, requirements):
        self.requirements = requirements

    @property
    def active_requirements(self):
        return [r for r in self.requirements if not r.is_resolved()]


def _continue(run):
    """What continue_run(requirements=run.requirements) does with the
    answers: it takes each requirement's tool_execution (agent/_run.py) and
    reads it as handle_tool_call_updates does (agent/_tools.py). A
    confirmation runs the tool when confirmed is True, else rejects it with
    confirmation_note; an ask_user call hands the model each question's
    selected_options; a user-input call copies each field's value into
    tool_args and runs the tool."""
    done = []
    for t in (r.tool_execution for r in run.requirements):
        if t.requires_confirmation:
            if t.confirmed is True and t.result is None:
                done.append(("run", t.tool_name, t.tool_args))
            else:
                done.append(("reject", t.tool_name, t.confirmation_note or "Tool call was rejected"))
        elif t.tool_name == "ask_user" and t.requires_user_input:
            done.append(("feedback", t.tool_name, [{"question": q.question, "selected": q.selected_options or []}
                                                   for q in t.user_feedback_schema or []]))
        elif t.requires_user_input:
            done.append(("run", t.tool_name, {**(t.tool_args or {}), **{f.name: f.value for f in t.user_input_schema or []}}))
    return done


def _expect(what, got, want):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def demo(agent, person):
    # The bridge hands back the request already made under a tool_call_id,
    # even one that has ended, so each run's ids are its own: with fixed ids
    # a second run against the same bridge would find nothing pending.
    run = secrets.token_hex(4)

    # A ToolExecution as Agno serialises it (to_dict), paused for user input:
    # the agent filled subject; the person must give the rest.
    send = {
        "tool_call_id": f"call_send_{run}", "tool_name": "send_report",
        "tool_args": {"subject": "Q3 report"},
        "requires_user_input": True,
        "user_input_schema": [
            {"name": "subject", "field_type": "str", "description": "Subject line", "value": "Q3 report"},
            {"name": "to_address", "field_type": "str", "description": "Who should receive the report?", "value": None},
            {"name": "copies", "field_type": "int", "description": "How many printed copies?", "value": None},
            {"name": "budget", "field_type": "float", "description": "Printing budget in EUR?", "value": None},
            {"name": "urgent", "field_type": "bool", "description": "Mark it urgent?", "value": None},
        ],
    }

    def answer_send(rec):
        _expect("questions asked", [q["id"] for q in rec["questions"]], ["to_address", "copies", "budget", "urgent"])
        _expect("input of copies", rec["questions"][1]["input"], {"type": "integer", "required": True})
        person.call("POST", f"/v1/questions/{rec['id']}/answer", {"answers": [
            {"id": "to_address", "selected": [], "custom": " ada@example.com "},
            {"id": "copies", "selected": [], "custom": "3"},
            {"id": "budget", "selected": [], "custom": "12.5"},
            {"id": "urgent", "selected": [], "custom": "yes"},
        ]})

    _play(agent, person, [("questions", f"agno:call_send_{run}:input", answer_send)], lambda: fill_tool(agent, send))
    values = {f["name"]: f["value"] for f in send["user_input_schema"]}
    _expect("filled values", values, {"subject": "Q3 report", "to_address": "ada@example.com", "copies": 3, "budget": 12.5, "urgent": True})
    print("user input:", json.dumps(values))

    # A list field answered with text that is not JSON: asked again, saying
    # why, under a tool_call_id of its own; the JSON answer fills it.
    tag = {"tool_call_id": f"call_tag_{run}", "tool_name": "tag_report", "user_input_schema": [
        {"name": "tags", "field_type": "list", "description": "Which tags?", "value": None}]}

    def answer_tags(text):
        def respond(rec):
            person.call("POST", f"/v1/questions/{rec['id']}/answer", {"answers": [{"id": "tags", "selected": [], "custom": text}]})
        return respond

    def answer_tags_again(rec):
        _expect("asked again", [q["id"] for q in rec["questions"]], ["tags"])
        if '"q3, urgent" could not be used' not in rec["questions"][0].get("detail", ""):
            raise AssertionError(f"the question asked again does not say why: {rec['questions'][0]!r}")
        answer_tags('["q3", "urgent"]')(rec)

    _play(agent, person, [("questions", f"agno:call_tag_{run}:input", answer_tags("q3, urgent")),
                          ("questions", f"agno:call_tag_{run}:input:2", answer_tags_again)], lambda: fill_tool(agent, tag))
    _expect("tags", tag["user_input_schema"][0]["value"], ["q3", "urgent"])
    print("list input:", json.dumps(tag["user_input_schema"][0]["value"]))
    _check_field_types(agent, person, run)

    # Two tool calls paused for confirmation: one rejected with a note, one allowed.
    for name, outcome, note, want_confirmed in [
        ("call_del_1", "rejected", "not the prod table", False),
        ("call_del_2", "allowed-once", None, True),
    ]:
        call_id = f"{name}_{run}"
        tool = {"tool_call_id": call_id, "tool_name": "delete_rows", "tool_args": {"table": "events", "older_than_days": 30},
                "requires_confirmation": True}

        def decide(rec, outcome=outcome, note=note):
            _expect("approval", (rec["tool_name"], rec["arguments"]), ("delete_rows", {"table": "events", "older_than_days": 30}))
            person.call("POST", f"/v1/approvals/{rec['id']}/decision", {"outcome": outcome, **({"note": note} if note else {})})

        _play(agent, person, [("approvals", f"agno:{call_id}:confirm", decide)],
              lambda tool=tool: confirm_tool(agent, tool, reason="clean up old events"))
        _expect(f"{name} confirmed", tool["confirmed"], want_confirmed)
        _expect(f"{name} note", tool["confirmation_note"], note)
        print("confirmation:", name, json.dumps({k: tool[k] for k in ("confirmed", "confirmation_note")}))

    # A Bridge made with expires_in gives its requests that expiry, not the
    # bridge's default (a day).
    brief = _DemoAgent(agent.server, agent.token, pending=agent.pending, poll_wait=5, expires_in="90s")
    tool = {"tool_call_id": f"call_brief_{run}", "tool_name": "delete_rows", "requires_confirmation": True}

    def allow_brief(rec):
        created, expires = (datetime.datetime.strptime(rec[k][:19], "%Y-%m-%dT%H:%M:%S") for k in ("created_at", "expires_at"))
        _expect("expires_in", (expires - created).total_seconds(), 90)
        person.call("POST", f"/v1/approvals/{rec['id']}/decision", {"outcome": "allowed-once"})

    _play(agent, person, [("approvals", f"agno:call_brief_{run}:confirm", allow_brief)], lambda: confirm_tool(brief, tool))
    print("expires_in: a request of a Bridge(expires_in=\"90s\") expires 90 s after it is created")

    # Agno's objects (the stand-ins above), through resolve_paused as an Agno
    # program calls it: a run paused on a call of the ask_user tool (user
    # feedback: questions with options), a user-input call and a
    # confirmation. What matters is what continue_run then reads, and that
    # Agno counts every pause resolved.
    trip = [
        _Question("Where to?", "Destination", [_Option("Beach", "sun and sea"), _Option("Mountains")]),
        _Question("What do you enjoy?", "Activities", [_Option("Museums"), _Option("Food", "local markets"), _Option("Hiking")],
                  multi_select=True),
        _Question("What budget?", "Budget", [_Option("Low"), _Option("High")]),
    ]
    ask = _Tool(f"call_ask_{run}", "ask_user", {"questions": []}, requires_user_input=True, user_feedback_schema=trip)
    book = _Tool(f"call_book_{run}", "book_trip", {"city": "Lisbon"}, requires_user_input=True,
                 user_input_schema=[_Field("city", str, "Which city?", "Lisbon"), _Field("nights", int, "How many nights?")])
    pay = _Tool(f"call_pay_{run}", "pay_deposit", {"amount": 200}, requires_confirmation=True)
    paused = _Run([_Requirement(ask), _Requirement(book), _Requirement(pay)])

    def answer_trip(rec):
        _expect("feedback questions", [(q["id"], q["question"], q.get("header"), q.get("options"), bool(q.get("multiSelect")))
                                       for q in rec["questions"]], [
            ("q1", "Where to?", "Destination", [{"label": "Beach", "description": "sun and sea"}, {"label": "Mountains"}], False),
            ("q2", "What do you enjoy?", "Activities", [{"label": "Museums"}, {"label": "Food", "description": "local markets"},
                                                         {"label": "Hiking"}], True),
            ("q3", "What budget?", "Budget", [{"label": "Low"}, {"label": "High"}], False)])
        person.call("POST", f"/v1/questions/{rec['id']}/answer", {"answers": [
            {"id": "q1", "selected": ["Beach"]},
            {"id": "q2", "selected": ["Museums", "Food"]},
            {"id": "q3", "selected": [], "custom": "under 2000 EUR"},
        ]})

    def answer_nights(text):
        def respond(rec):
            _expect("input asked", [q["id"] for q in rec["questions"]], ["nights"])
            person.call("POST", f"/v1/questions/{rec['id']}/answer", {"answers": [{"id": "nights", "selected": [], "custom": text}]})
        return respond

    def reject_with(note):
        return lambda rec: person.call("POST", f"/v1/approvals/{rec['id']}/decision", {"outcome": "rejected", "note": note})

    _play(agent, person, [
        ("questions", f"agno:call_ask_{run}:feedback", answer_trip),
        ("questions", f"agno:call_book_{run}:input", answer_nights("5")),
        ("approvals", f"agno:call_pay_{run}:confirm", reject_with("not before Friday"))], lambda: resolve_paused(agent, paused))
    _expect("pauses left", [r.tool_execution.tool_name for r in paused.active_requirements], [])
    _expect("answered", (ask.answered, book.answered), (True, True))
    _expect("options selected", [[o.selected for o in q.options] for q in trip], [[True, False], [True, True, False], [False, False]])
    _expect("continued", _continue(paused), [
        ("feedback", "ask_user", [{"question": "Where to?", "selected": ["Beach"]},
                                  {"question": "What do you enjoy?", "selected": ["Museums", "Food"]},
                                  {"question": "What budget?", "selected": ["under 2000 EUR"]}]),
        ("run", "book_trip", {"city": "Lisbon", "nights": 5}),
        ("reject", "pay_deposit", "not before Friday")])
    print("user feedback:", json.dumps(_continue(paused)[0][2]))

    # A question the person dismisses ends the ask in the program's terms,
    # not in the harness's (its tool's name, ask_user_question).
    ended = []

    def ask_dismissed():
        try:
            agent.ask("questions", {"tool_call_id": f"agno:call_gone_{run}", "questions": [{"id": "day", "question": "Which day?"}]})
        except BridgeError as e:
            ended.append((e.code, e.message))

    _play(agent, person, [("questions", f"agno:call_gone_{run}",
                           lambda rec: person.call("POST", f"/v1/questions/{rec['id']}/dismiss"))], ask_dismissed)
    _expect("a dismissed question", ended, [("ASK_CANCELLED", "the user dismissed the question")])

    # Three questions with the same text, the first already answered: the
    # bridge takes the other two (ids q2, q3), and each keeps its own answer,
    # though Agno's provide_user_feedback names a question by its text.
    sizes = [_Question("Which size?", options=[_Option("S"), _Option("M"), _Option("L")]) for _ in range(3)]
    sizes[0].selected_options, sizes[0].options[0].selected = ["S"], True
    ask = _Tool(f"call_size_{run}", "ask_user", {}, requires_user_input=True, user_feedback_schema=sizes)
    paused = _Run([_Requirement(ask)])

    def answer_sizes(rec):
        _expect("same-text questions asked", [(q["id"], q["question"]) for q in rec["questions"]],
                [("q2", "Which size?"), ("q3", "Which size?")])
        person.call("POST", f"/v1/questions/{rec['id']}/answer", {"answers": [
            {"id": "q2", "selected": ["L"]}, {"id": "q3", "selected": ["M"]}]})

    _play(agent, person, [("questions", f"agno:call_size_{run}:feedback", answer_sizes)], lambda: resolve_paused(agent, paused))
    _expect("same-text answers", [q.selected_options for q in sizes], [["S"], ["L"], ["M"]])
    _expect("same-text options selected", [[o.selected for o in q.options] for q in sizes],
            [[True, False, False], [False, False, True], [False, True, False]])
    _expect("pauses left (same text)", paused.active_requirements, [])

    # An early Agno 2 RunRequirement: no provide_user_input, and a reject()
    # that takes no note. The note still reaches the tool.
    book = _Tool(f"call_book2_{run}", "book_trip", {}, requires_user_input=True, user_input_schema=[_Field("nights", int)])
    pay = _Tool(f"call_pay2_{run}", "pay_deposit", {"amount": 200}, requires_confirmation=True)
    paused = _Run([_EarlyRequirement(book), _EarlyRequirement(pay)])
    _play(agent, person, [
        ("questions", f"agno:call_book2_{run}:input", answer_nights("3")),
        ("approvals", f"agno:call_pay2_{run}:confirm", reject_with("over budget"))], lambda: resolve_paused(agent, paused))
    _expect("pauses left (early Agno 2)", [r.tool_execution.tool_name for r in paused.active_requirements], [])
    _expect("continued (early Agno 2)", _continue(paused), [("run", "book_trip", {"nights": 3}), ("reject", "pay_deposit", "over budget")])
    print("early Agno 2:", json.dumps(_continue(paused)))

    # A restarting bridge answers 503 UNAVAILABLE, its proxy 502, or the
    # connection breaks mid-answer: the create (safe to send again: its
    # tool_call_id) and the wait are retried.
    flaky = _Flaky(agent.server, ["503", "502", "cut"])
    try:
        patient = _DemoAgent(flaky.url, agent.token, pending=agent.pending, poll_wait=5)
        tool = {"tool_call_id": f"call_del_3_{run}", "tool_name": "delete_rows", "tool_args": {"table": "events"}, "requires_confirmation": True}

        def allow(rec):
            person.call("POST", f"/v1/approvals/{rec['id']}/decision", {"outcome": "allowed-once"})

        _play(agent, person, [("approvals", f"agno:call_del_3_{run}:confirm", allow)], lambda: confirm_tool(patient, tool))
        _expect("confirmed through a flaky bridge", tool["confirmed"], True)
        _expect("creates sent", flaky.calls.get("POST"), 4)

        # NO_PROVIDER is a 503 too, but waiting does not help: not retried.
        flaky.calls = {}
        try:
            patient.ask("questions", {**user_input_request(send, review_filled=True), "route": "no-such-route"})
            raise AssertionError("a request to an unknown route was accepted")
        except BridgeError as e:
            _expect("unknown route through ask", (e.code, flaky.calls), ("NO_PROVIDER", {"POST": 1}))
    finally:
        flaky.close()
    print("rode out 503, 502 and a cut-off answer; NO_PROVIDER not retried")

    # A bridge that holds no call (store.max_wait: 0) answers every wait at
    # once, still pending: polled at most once a second, not in a busy loop.
    unheld = Bridge(agent.server, agent.token, poll_wait=5)
    polls, started = [], time.monotonic()

    def call_unheld(method, path, body=None, wait=0):
        if method == "GET":
            polls.append(path)
            if time.monotonic() - started > 1.5:
                person.call("POST", f"/v1/approvals/{polls[0].split('/')[3].split('?')[0]}/decision", {"outcome": "allowed-once"})
            return agent.call(method, path.replace("?wait=5s", "?wait=0s"))
        return agent.call(method, path, body)

    unheld.call = call_unheld
    unheld.ask("approvals", approval_request({"tool_call_id": f"call_poll_{run}", "tool_name": "poll"}))
    if len(polls) > 4:
        raise AssertionError(f"{len(polls)} polls in about 2 s of a bridge that holds no call: a busy loop")
    print("polled a bridge that holds no call", len(polls), "times in", round(time.monotonic() - started, 1), "s")

    # Something else at the bridge's address answers 200 with a web page.
    flaky = _Flaky(agent.server, ["html"])
    try:
        Bridge(flaky.url, agent.token).ask("approvals", approval_request({"tool_call_id": "call_y", "tool_name": "y"}))
        raise AssertionError("a web page was taken for the bridge's answer")
    except BridgeError as e:
        _expect("not the bridge", (e.code, flaky.calls), ("BAD_RESPONSE", {"POST": 1}))
    finally:
        flaky.close()

    # A URL that redirects (http:// where a proxy sends everything to
    # https://): refused, naming the URL to use. Followed, the create would
    # become a GET of the request list (FORBIDDEN, as if the token were wrong).
    flaky = _Flaky(agent.server, ["301"])
    try:
        Bridge(flaky.url, agent.token).ask("approvals", approval_request({"tool_call_id": "call_r", "tool_name": "r"}))
        raise AssertionError("a redirect was followed")
    except BridgeError as e:
        _expect("redirected", (e.code, f"use {agent.server} as the bridge's URL" in e.message, flaky.calls), ("HTTP_301", True, {"POST": 1}))
    finally:
        flaky.close()

    # Something that does not speak HTTP at all (an ssh server on a typo'd
    # port): BAD_RESPONSE at once, not http.client's BadStatusLine.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()

        def greet():
            conn, _ = s.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

        t = threading.Thread(target=greet, daemon=True)
        t.start()
        try:
            Bridge(f"http://127.0.0.1:{s.getsockname()[1]}").ask("approvals", approval_request({"tool_call_id": "call_z", "tool_name": "z"}))
            raise AssertionError("an ssh server was taken for the bridge")
        except BridgeError as e:
            _expect("not HTTP", e.code, "BAD_RESPONSE")
        t.join(timeout=10)

    # Something that reads the request and closes the connection without a
    # word (Redis at the bridge's address), which a bridge stopping mid-call
    # does too: a GET /healthz closed as well tells it is no bridge, and the
    # create is not retried for retry_for.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        heard = []

        def hang_up():
            while True:
                try:
                    conn, _ = s.accept()
                except OSError:  # s closed
                    return
                with conn:
                    heard.append(conn.recv(65536).split(b"\r\n")[0].decode())

        threading.Thread(target=hang_up, daemon=True).start()
        try:
            Bridge(f"http://127.0.0.1:{s.getsockname()[1]}", retry_for=5).ask("approvals", approval_request({"tool_call_id": "call_db", "tool_name": "db"}))
            raise AssertionError("a server that closes without a response was taken for the bridge")
        except BridgeError as e:
            _expect("closed without a response", (e.code, "GET /healthz" in e.message, heard),
                    ("BAD_RESPONSE", True, ["POST /v1/approvals HTTP/1.1", "GET /healthz HTTP/1.1"]))

    # Nothing listening: after retry_for, the bridge's error, not urllib's.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nobody = f"http://127.0.0.1:{s.getsockname()[1]}"
    try:
        Bridge(nobody, retry_for=1).ask("approvals", approval_request({"tool_call_id": "call_x", "tool_name": "x"}))
        raise AssertionError("an ask with no bridge returned")
    except BridgeError as e:
        _expect("no bridge", (e.code, e.message.endswith("; is `bridge serve` running there? Bridge's server "
                                                         "(BRIDGE_SERVER, or --server for the script) says where it is")),
                ("ASKBRIDGE_UNREACHABLE", True))

    # No answerer for the route: the bridge's NO_PROVIDER reaches the caller.
    try:
        agent.call("POST", "/v1/questions", {**user_input_request(send, review_filled=True), "route": "no-such-route"})
        raise AssertionError("a request to an unknown route was accepted")
    except BridgeError as e:
        _expect("unknown route", e.code, "NO_PROVIDER")

    # A pause resolve_paused can't resolve (here an external execution) is
    # refused before anything is asked, not left for the loop to meet again;
    # so is one in a RunOutput's to_dict() form, read off its tool.
    external = _Run([_Requirement(_Tool(f"call_ok_{run}", "deploy", requires_confirmation=True)),
                     _Requirement(_Tool(f"call_ext_{run}", "run_migration", external_execution_required=True))])
    as_dict = {"requirements": [{"tool_execution": {"tool_call_id": f"call_ext_{run}", "tool_name": "run_migration",
                                                    "external_execution_required": True, "result": None}}]}
    for paused in (external, as_dict):
        try:
            resolve_paused(Bridge(nobody, retry_for=1), paused)
            raise AssertionError("a pause for an external execution was taken as resolved")
        except ValueError as e:
            _expect("an external execution names its tool", "run_migration" in str(e), True)

    # An @approval tool (approval_type "required"): continue_run waits for
    # Agno's own approval record, which an answer through the bridge does
    # not resolve. Refused before anything is asked, saying what to use.
    gated = _Tool(f"call_gated_{run}", "drop_table", requires_confirmation=True)
    gated.approval_type = "required"
    for paused in (_Run([_Requirement(gated)]), {"tools_requiring_confirmation": [vars(gated)]}):
        try:
            resolve_paused(Bridge(nobody, retry_for=1), paused)
            raise AssertionError("an @approval tool was asked through the bridge")
        except ValueError as e:
            _expect("an @approval tool is refused", ("drop_table" in str(e), "requires_confirmation" in str(e)), (True, True))
    # One that pauses for input is told the flag that pauses for input.
    gated = _Tool(f"call_gated_in_{run}", "rename", {}, requires_user_input=True, user_input_schema=[_Field("name", str)])
    gated.approval_type = "required"
    try:
        resolve_paused(Bridge(nobody, retry_for=1), _Run([_Requirement(gated)]))
        raise AssertionError("an @approval tool was asked through the bridge")
    except ValueError as e:
        _expect("an @approval input tool is told its flag", "@tool(requires_user_input=True)" in str(e), True)

    # A pause with nothing left to ask (the fields, and the questions, hold
    # their answers already) asks nobody, and is no longer counted open.
    filled = _Tool(f"call_filled_{run}", "book_trip", {}, requires_user_input=True, user_input_schema=[_Field("nights", int, value=2)])
    chosen = _Question("Where to?", options=[_Option("Beach")])
    chosen.selected_options = ["Beach"]
    asked = _Tool(f"call_chosen_{run}", "ask_user", {}, requires_user_input=True, user_feedback_schema=[chosen])
    paused = _Run([_Requirement(filled), _Requirement(asked)])
    resolve_paused(Bridge(nobody, retry_for=1), paused)
    _expect("pauses left with nothing to ask", [r.tool_execution.tool_name for r in paused.active_requirements], [])

    _check_failing_person(agent, person, run)
    _check_script_fails_cleanly(agent)
    if os.name == "posix":  # elsewhere a signal can't be sent to a process
        _check_stopped(agent)


def _check_field_types(agent, person, run):
    """Parameters annotated with typing's generics, as Agno hands them over:
    UserInputField.field_type is the type hint as written
    (tools/function.py: type_hints.get(name, str)), and to_dict() writes
    its __name__ ("List" for typing.List[str], "Optional" for
    Optional[int], "Literal"; an X | None has no __name__ to write)."""
    fields = [
        _Field("stops", typing.List[str], "Which stops?"),
        _Field("prefs", typing.Dict[str, int], "Which preferences?"),
        _Field("nights", typing.Optional[int], "How many nights, if you know?"),
        _Field("pace", typing.Literal["slow", "fast"], "Which pace?"),
        _Field("seat", typing.Optional[typing.Literal["aisle", "window"]], "Which seat?"),
        _Field("cities", "List", "Which cities?"),
        _Field("note", "Optional", "Anything to add?"),
        _Field("mode", "Literal", "Which mode?"),
    ]
    if sys.version_info >= (3, 10):
        fields.append(_Field("budget", float | None, "What budget?"))
    plan = _Tool(f"call_plan_{run}", "plan_trip", {}, requires_user_input=True, user_input_schema=fields)
    paused = _Run([_Requirement(plan)])
    asked = {q["id"]: {k: q[k] for k in ("input", "options") if k in q} for q in user_input_request(plan)["questions"]}
    _expect("annotated fields asked", asked, {
        "stops": {"input": {"type": "string", "required": True}},
        "prefs": {"input": {"type": "string", "required": True}},
        "nights": {"input": {"type": "integer"}},
        "pace": {"options": [{"label": "slow"}, {"label": "fast"}]},
        "seat": {"options": [{"label": "aisle"}, {"label": "window"}]},
        "cities": {"input": {"type": "string", "required": True}},
        "note": {"input": {"type": "string"}},
        "mode": {"input": {"type": "string", "required": True}},
        **({"budget": {"input": {"type": "number"}}} if sys.version_info >= (3, 10) else {}),
    })

    def answer_plan(rec):
        person.call("POST", f"/v1/questions/{rec['id']}/answer", {"answers": [
            {"id": "stops", "selected": [], "custom": '["Porto", "Lisbon"]'},
            {"id": "prefs", "selected": [], "custom": '{"quiet": 1}'},
            {"id": "nights", "selected": []},
            {"id": "pace", "selected": ["fast"]},
            {"id": "seat", "selected": [], "custom": "middle"},
            {"id": "cities", "selected": [], "custom": '["Faro"]'},
            {"id": "mode", "selected": [], "custom": "train"},
        ] + ([{"id": "budget", "selected": [], "custom": "800.5"}] if sys.version_info >= (3, 10) else [])})

    def answer_seat_again(rec):
        _expect("asked again", [(q["id"], q.get("options")) for q in rec["questions"]],
                [("seat", [{"label": "aisle"}, {"label": "window"}])])
        if 'not one of "aisle", "window"' not in rec["questions"][0].get("detail", ""):
            raise AssertionError(f"the choice asked again does not say why: {rec['questions'][0]!r}")
        person.call("POST", f"/v1/questions/{rec['id']}/answer", {"answers": [{"id": "seat", "selected": ["window"]}]})

    _play(agent, person, [("questions", f"agno:call_plan_{run}:input", answer_plan),
                          ("questions", f"agno:call_plan_{run}:input:2", answer_seat_again)],
          lambda: resolve_paused(agent, paused))
    _expect("annotated values", {f.name: f.value for f in fields}, {
        "stops": ["Porto", "Lisbon"], "prefs": {"quiet": 1}, "nights": None, "pace": "fast", "seat": "window",
        "cities": ["Faro"], "note": None, "mode": "train", **({"budget": 800.5} if sys.version_info >= (3, 10) else {})})
    _expect("pauses left (annotated)", paused.active_requirements, [])

    # A required choice skipped (the bridge can't require one) is asked
    # again; the builtin generics map as typing's do.
    pick = _Tool(f"call_pick_{run}", "pick", {}, requires_user_input=True,
                 user_input_schema=[_Field("pace", typing.Literal["slow", "fast"])])
    bad = apply_answer(pick, {"answers": [{"id": "pace", "selected": []}]})
    _expect("a required choice skipped", (bad, pick.answered), ({"pace": ("", 'nothing was chosen; choose one of "slow", "fast"')}, None))
    _expect("asked again for a choice", reask_request(user_input_request(pick), bad, 1)["questions"][0]["detail"],
            'Nothing was chosen; choose one of "slow", "fast".')
    if sys.version_info >= (3, 9):
        _expect("builtin generics", (parse_input('["a"]', list[str]), parse_input('{"a": 1}', dict[str, int])), (["a"], {"a": 1}))
    print("annotated input:", json.dumps({f.name: f.value for f in fields}))


def _check_failing_person(agent, person, run):
    """A person who fails (can't reach the bridge, finds the request not as
    expected, or finds nothing in time) withdraws the agent's request: the
    agent's wait ends at once and the play fails saying why, rather than
    hanging until the request expires (a day by default)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        unreachable = Bridge(f"http://127.0.0.1:{s.getsockname()[1]}")

    def not_as_expected(rec):
        raise AssertionError("not the request expected")

    # (case, the person, how it responds, the suffix of the tool_call_id it
    # waits for, its patience in seconds, what its failure says)
    for case, who, respond, expects, patience, says in [
        ("unreachable", unreachable, not_as_expected, "", 20, "Connection refused"),
        ("wrong", person, not_as_expected, "", 20, "not the request expected"),
        ("unasked", person, not_as_expected, "_other", 1, "within 1 s"),
    ]:
        call_id = f"call_fail_{case}_{run}"
        tool = {"tool_call_id": call_id, "tool_name": "delete_rows", "requires_confirmation": True}
        outcome = []

        def play():
            try:
                _play(agent, who, [("approvals", f"agno:{call_id}{expects}:confirm", respond)],
                      lambda: confirm_tool(agent, tool), patience=patience)
                outcome.append(None)
            except Exception as e:
                outcome.append(e)

        t = threading.Thread(target=play, daemon=True)
        t.start()
        t.join(timeout=10)
        if t.is_alive():
            raise AssertionError(f"a failing person ({case}) left the agent waiting")
        if not isinstance(outcome[0], AssertionError) or says not in str(outcome[0]):
            raise AssertionError(f"a failing person ({case}) was reported as {outcome[0]!r}, not with {says!r}")
        rec = agent.call("GET", f"/v1/approvals?tool_call_id=agno:{call_id}:confirm")
        _expect(f"the request a failing person ({case}) left", rec["status"], "cancelled")
    print("a failing person withdraws the request: unreachable, wrong request, nothing in time")

    # The demo's deadline: when it passes, what the agent waits for is
    # withdrawn, and the demo fails naming it.
    stuck = approval_request({"tool_call_id": f"call_stuck_{run}", "tool_name": "stuck"})
    try:
        _within(1, agent, lambda: agent.ask("approvals", stuck))
        raise AssertionError("an ask nobody answers returned")
    except TimeoutError as e:
        rec = agent.call("GET", f"/v1/approvals?tool_call_id={stuck['tool_call_id']}")
        _expect("past the deadline", (stuck["tool_call_id"] in str(e), rec["status"]), (True, "cancelled"))
    print("past the deadline, the demo withdraws what it waits for")


def _check_script_fails_cleanly(agent):
    """Run as a script against no bridge, or a bridge that refuses the
    token, the demo fails at once with the bridge's error, not with a
    traceback (after two minutes of retries, with no bridge)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nobody = f"http://127.0.0.1:{s.getsockname()[1]}"
    refusing = _Flaky(agent.server, [None] + ["401"] * 10)  # GET /healthz needs no token
    try:
        for what, server, says in [("no bridge", nobody, "ASKBRIDGE_UNREACHABLE"),
                                   ("a token refused", refusing.url, "UNAUTHORIZED: as the agent (BRIDGE_TOKEN, ask scope): the bearer token is not valid")]:
            try:
                ran = subprocess.run([sys.executable, os.path.abspath(__file__), "--demo", "--server", server],
                                     capture_output=True, text=True, timeout=20)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"the demo with {what} did not end within 20 s") from None
            if ran.returncode == 0 or says not in ran.stderr or "Traceback" in ran.stderr:
                raise AssertionError(f"the demo with {what}: exit status {ran.returncode}, stderr {ran.stderr!r}")
    finally:
        refusing.close()
    print("run with no bridge, or a token refused, the demo fails at once saying why")


def _check_stopped(agent):
    """Run as a script against a bridge with --server, the demo warns what it
    will post where; stopped (SIGTERM, as Ctrl-C) while it waits for a
    person, it withdraws what it asked and exits."""
    hiding = _Flaky(agent.server, [], hide_pending=True)  # the person finds nothing: the first ask stays pending
    try:
        demo = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--demo", "--server", hiding.url],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            if not hiding.asked.wait(20):
                raise AssertionError("the demo asked nothing within 20 s")
            demo.send_signal(signal.SIGTERM)
            _, err = demo.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            raise AssertionError("the demo did not end within 20 s of SIGTERM") from None
        finally:
            if demo.poll() is None:
                demo.kill()
                demo.wait()
        rec = agent.call("GET", f"/v1/questions?tool_call_id={urllib.parse.quote(hiding.created[0])}")
        _expect("stopped by SIGTERM", (demo.returncode, rec["status"], f"withdrew 1 pending request(s): {hiding.created[0]}" in err,
                                       f"the bridge at {hiding.url}" in err and "Slack or Discord" in err),
                (128 + signal.SIGTERM, "cancelled", True, True))
    finally:
        hiding.close()
    print("stopped by SIGTERM, the demo withdraws what it asked")


def _check_bridge(agent, person):
    """Fail at once, in the bridge's words, when the demo can't run: nothing
    answers at the server, or it refuses the agent's or the person's token.
    (A Bridge rides out a bridge it can't reach for two minutes, as a
    program asking a person should; a self-test should not.)"""
    try:
        agent.call("GET", "/healthz")
    except OSError as e:  # urllib's URLError is one
        raise BridgeError("ASKBRIDGE_UNREACHABLE", f"nothing answers at {agent.server} ({getattr(e, 'reason', e)}): "
                          "is `bridge serve` running there? --server (or BRIDGE_SERVER) says where; "
                          "--start-bridge BINARY starts one") from None
    for who, bridge, env, path in [("agent", agent, "BRIDGE_TOKEN, ask scope", "/v1/questions?tool_call_id=agno-demo-check"),
                                   ("person", person, "BRIDGE_ANSWER_TOKEN, answer scope", "/v1/questions?status=pending&limit=1")]:
        try:
            bridge.call("GET", path)
        except BridgeError as e:
            if e.code != "NOT_FOUND":  # no such request: the token may read its own
                raise BridgeError(e.code, f"as the {who} ({env}): {e.message}", e.status) from None


class _Terminated(Exception):
    """SIGTERM, raised in the main thread as SIGINT raises KeyboardInterrupt."""

    def __init__(self, signum):
        super().__init__(f"signal {signum}")
        self.signum = signum


def _terminated(signum, frame):
    raise _Terminated(signum)


def start_bridge(binary):
    """Run `bridge serve` on a free loopback port; return it and its URL."""
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r'askbridge listening"? addr=(\S+)', line)
        if m:
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep draining
            return proc, "http://" + m.group(1)
    proc.wait()
    raise SystemExit(f"bridge serve exited ({proc.returncode}) before listening")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--demo", action="store_true", help="run the self-test against a bridge")
    p.add_argument("--server", default=os.environ.get("BRIDGE_SERVER", "http://127.0.0.1:8080"))
    p.add_argument("--start-bridge", metavar="BINARY", help="start `BINARY serve` on a free port and use it")
    p.add_argument("--runs", type=int, default=1, metavar="N",
                   help="run the self-test N times against the same bridge (each run asks under new tool_call_ids)")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="fail after SECONDS in all, withdrawing what is pending (default: 120 for each run)")
    args = p.parse_args()
    if not args.demo:
        p.print_help()
        return 2
    proc = None
    if args.start_bridge:
        proc, args.server = start_bridge(args.start_bridge)
    else:
        print(f"agno_askbridge demo: asking test questions and approvals (send_report, delete_rows, plan_trip, ...) "
              f"on the default route of the bridge at {args.server}, and answering them itself; where that route has "
              "Slack or Discord targets, each is posted to their channels. Ctrl-C withdraws what is pending.", file=sys.stderr)
    agent = _DemoAgent(args.server, os.environ.get("BRIDGE_TOKEN"), poll_wait=5)
    person = Bridge(args.server, os.environ.get("BRIDGE_ANSWER_TOKEN"))
    signal.signal(signal.SIGTERM, _terminated)

    def runs():
        for _ in range(args.runs):
            demo(agent, person)

    try:
        _check_bridge(agent, person)
        _within(args.timeout or 120 * args.runs, agent, runs)
    except (BridgeError, AssertionError, TimeoutError) as e:
        print(f"agno_askbridge demo failed: {e}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Terminated) as e:
        withdrawn = agent.withdraw_pending()
        names = f": {', '.join(withdrawn)}" if withdrawn else ""
        print(f"agno_askbridge demo stopped; withdrew {len(withdrawn)} pending request(s){names}", file=sys.stderr)
        return 128 + getattr(e, "signum", signal.SIGINT)
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=15)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
