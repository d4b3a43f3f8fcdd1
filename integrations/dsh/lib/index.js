// askbridge as the DeepSeek Harness's answerer: a cordis plugin that hands
// ask_user_question (and tool approvals) to an askbridge server, which posts
// them to Slack or Discord, and hands the person's answer back to the agent.
//
// Two harness APIs exist and both are served; which one is detected when the
// `userQuestions` service appears:
//   - @deepseek-ai/dsh-user-questions@0.1.0-rc.8: one provider,
//     ctx.userQuestions.registerProvider({ ask }).
//   - newer harnesses: ctx.userQuestions has no registerProvider and
//     dispatches the 'user-questions/request' waterfall; this plugin listens
//     with prepend, accepts by returning the answer, declines with next().
// 'approval/request' is a waterfall in both (dsh-user-approval).

import { createHash } from 'node:crypto'
import { UserQuestionError } from '@deepseek-ai/dsh-user-questions'
import { BridgeClient, BridgeError, MAX_BACKOFF_MS, NetworkError, newToolCallID, retryDelay, sleep, transient } from './client.js'

export { UserQuestionError }

/** The seam's own messages (PLATFORM.md, dsh-user-questions), verbatim. */
export const SEAM_MESSAGES = Object.freeze({
  EMPTY_QUESTIONS: 'ask_user_question requires at least one question',
  DELEGATED_CALLER: 'human interaction is unavailable while the calling agent is owned by another live agent; '
    + "include the unresolved question or decision in the child agent's final result",
  NO_PROVIDER: 'no user-questions answerer accepted the request',
  ASK_ABORTED: 'ask_user_question was aborted before the user answered',
  ASK_CANCELLED: 'the user cancelled ask_user_question',
  ASK_TIMED_OUT: 'ask_user_question timed out before the user answered',
})

/** The bridge's wording for approvals that end without a decision. */
const APPROVAL_MESSAGES = Object.freeze({
  ASK_ABORTED: 'the approval request was aborted before the user decided',
  ASK_CANCELLED: 'the user dismissed the approval request',
  ASK_TIMED_OUT: 'the approval request timed out before the user decided',
})

/** Bridge error codes that are the seam's own and pass through unchanged. */
const SEAM_CODES = new Set(['EMPTY_QUESTIONS', 'BAD_INTENT', 'INVALID_REQUEST', 'DELEGATED_CALLER', 'NO_PROVIDER'])

/**
 * The seam's code of a bridge error code: the bridge's own, or, for a body
 * over its 1 MiB limit (413 TOO_LARGE), INVALID_REQUEST, as the seam calls
 * every request over the documented sizes.
 */
function seamCode (code) {
  return code === 'TOO_LARGE' ? 'INVALID_REQUEST' : code
}

/** The seam code of a request that ended without an answer, by status. */
const END_CODES = Object.freeze({ cancelled: 'ASK_ABORTED', dismissed: 'ASK_CANCELLED', expired: 'ASK_TIMED_OUT' })
const END_CODE_SET = new Set(Object.values(END_CODES))

/**
 * An approval that could not be decided through the bridge. The harness's
 * approval service turns any throw into its fail-closed 'unavailable'.
 */
export class AskbridgeError extends Error {
  constructor (message, code, options) {
    super(message, options)
    this.name = 'AskbridgeError'
    this.code = code
  }
}

export const name = 'askbridge'

const MAX_CALL_ID = 200 // bytes, the bridge's limit on tool_call_id
const MAX_CALLER = 200 // characters of caller.agent/name/session
const MAX_ROUNDS = 100 // approvals decided before under one key: see #create
const MAX_REASON = 4000 // characters of an approval reason
const CLOSE_WAIT_MS = 5000 // the longest an unload waits for withdrawals on their way

// ---------------------------------------------------------------- config

function seconds (value, key, dflt, min, max) {
  if (value === undefined || value === null) return dflt
  const n = Number(value)
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new TypeError(`askbridge: config.${key} must be a number of seconds from ${min} to ${max}, not ${JSON.stringify(value)}`)
  }
  return n
}

function optString (value, key) {
  if (value === undefined || value === null || value === '') return undefined
  if (typeof value !== 'string') throw new TypeError(`askbridge: config.${key} must be a string`)
  return value
}

function optBool (value, key, dflt) {
  if (value === undefined || value === null) return dflt
  if (typeof value !== 'boolean') throw new TypeError(`askbridge: config.${key} must be true or false`)
  return value
}

/**
 * The first of the environment variables names that is set and not empty,
 * as {value, from}: the plugin's own names first, then those of the
 * bridge's CLI, MCP server and Agno example (BRIDGE_SERVER, BRIDGE_TOKEN),
 * so that one environment serves them all.
 */
function fromEnv (...names) {
  for (const name of names) {
    const value = process.env[name]
    if (value !== undefined && value !== '') return { value, from: `$${name}` }
  }
  return undefined
}

/** The plugin's config keys; index.d.ts's Config has the same. */
const CONFIG_KEYS = Object.freeze(['url', 'token', 'route', 'expiresIn', 'caller', 'pollWait', 'retryFor', 'timeout', 'questions', 'approvals'])

/** A key as a person may have meant it: case, - and _ aside (expires_in is expiresIn). */
function squash (key) {
  return key.toLowerCase().replace(/[-_]/g, '')
}

/**
 * Refuse a config that is not an object, or that has a key the plugin does
 * not know: a misspelt one (expires_in for expiresIn) would otherwise
 * silently not apply. Thrown as the other config errors are, a TypeError
 * from apply(), which cordis logs and rejects the plugin's load with (its
 * own schema errors are TypeErrors too).
 */
function checkKeys (config) {
  if (typeof config !== 'object' || Array.isArray(config)) {
    throw new TypeError(`askbridge: config must be an object with the keys ${CONFIG_KEYS.join(', ')}; not ${JSON.stringify(config)}`)
  }
  const unknown = Object.keys(config).filter((k) => !CONFIG_KEYS.includes(k)).map((k) => {
    const meant = CONFIG_KEYS.find((known) => squash(known) === squash(k))
    return `config.${k}` + (meant === undefined ? '' : ` (did you mean ${meant}?)`)
  })
  if (unknown.length > 0) {
    const are = unknown.length === 1 ? 'is not a key' : 'are not keys'
    throw new TypeError(`askbridge: ${unknown.join(', ')} ${are} of the plugin's config; its keys are ${CONFIG_KEYS.join(', ')}`)
  }
}

/**
 * A token as fetch sends it (HTTP whitespace at its ends dropped), or a
 * TypeError naming where it came from when it holds a character no
 * Authorization header carries as the bridge has it: fetch would refuse a
 * line break with the token in its message, and send a non-ASCII one in
 * other bytes than the bridge's. The token itself is never in the error.
 */
function checkToken (token, from) {
  const trimmed = token.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '')
  const bad = /[^\x20-\x7e\t]/.exec(trimmed)
  if (bad !== null) {
    const c = bad[0].charCodeAt(0)
    const what = c === 0x0a || c === 0x0d ? 'a line break' : c < 0x20 || c === 0x7f ? 'a control character' : 'a character that is not ASCII'
    throw new TypeError(`askbridge: ${from} holds ${what} (at index ${bad.index} of the token, which is not shown); a token is one line of ASCII`)
  }
  return trimmed
}

// expires_in as the bridge reads it (internal/api/server.go parseDuration):
// a number of seconds, or a Go duration, at most 1e9 seconds either way.
const SECONDS = /^(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/
const GO_DURATION = /^\+?((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$/
const UNIT_SECONDS = { ns: 1e-9, us: 1e-6, 'µs': 1e-6, 'μs': 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 }
const MAX_EXPIRES_IN = 1e9

/**
 * config.expiresIn checked as the bridge will read it, so that one it
 * refuses fails the load instead of every ask (as INVALID_REQUEST, which
 * the model would take for its own mistake).
 */
function expiresInOf (value) {
  if (value === undefined || value === null || value === '') return undefined
  const shown = typeof value === 'string' ? JSON.stringify(value) : String(value)
  const refuse = (why) => new TypeError(`askbridge: config.expiresIn ${shown} ${why}; write a duration such as "30m" or "1h30m", or a number of seconds`)
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw refuse('is not a number of seconds from 0')
    if (value > MAX_EXPIRES_IN) throw refuse('is over the bridge\'s limit of 1e9 seconds')
    return value
  }
  if (typeof value !== 'string') throw refuse('is neither a duration nor a number of seconds')
  let secs
  if (SECONDS.test(value)) {
    secs = Number(value)
  } else if (GO_DURATION.test(value)) {
    secs = 0
    for (const [, n, unit] of value.matchAll(/(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) secs += Number(n) * UNIT_SECONDS[unit]
  } else {
    throw refuse(value.startsWith('-') ? 'is negative' : 'is not a duration')
  }
  if (!(secs <= MAX_EXPIRES_IN)) throw refuse('is over the bridge\'s limit of 1e9 seconds')
  return value
}

const MAX_ROUTE = 100 // bytes, the bridge's limit on route

/** config.route, refused at load when the bridge would refuse it at every ask. */
function routeOf (value) {
  const route = optString(value, 'route')
  if (route !== undefined && Buffer.byteLength(route) > MAX_ROUTE) {
    throw new TypeError(`askbridge: config.route is ${Buffer.byteLength(route)} bytes long; the bridge's route names are at most ${MAX_ROUTE}`)
  }
  return route
}

/** Validate the plugin config and fill in defaults. */
export function resolveConfig (config = {}) {
  config ??= {}
  checkKeys(config)
  const configured = optString(config.url, 'url')
  const { value: url, from } = configured !== undefined
    ? { value: configured, from: 'config.url' }
    : fromEnv('ASKBRIDGE_URL', 'BRIDGE_SERVER') ?? { value: 'http://127.0.0.1:8080' }
  let parsed
  try {
    parsed = new URL(url)
  } catch {
    throw new TypeError(`askbridge: ${from} ${JSON.stringify(url)} is not a URL; write e.g. http://127.0.0.1:8080`)
  }
  if (parsed.username !== '' || parsed.password !== '') {
    // Not shown: the password would be in the error, and fetch refuses
    // such a URL anyway.
    throw new TypeError(`askbridge: ${from} carries a user name or password, which the plugin can't send (the URL is not shown); `
      + 'give the bridge\'s URL without them, and the token in config.token or $ASKBRIDGE_TOKEN')
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError(`askbridge: ${from} ${JSON.stringify(url)} must be an http:// or https:// URL`)
  }
  if (parsed.search !== '' || parsed.hash !== '' || url.includes('?') || url.includes('#')) {
    throw new TypeError(`askbridge: ${from} ${JSON.stringify(url)} must be the bridge's base URL, without a query or fragment: the plugin adds /v1/... to it`)
  }
  const expiresIn = expiresInOf(config.expiresIn)
  const tokenFrom = optString(config.token, 'token') !== undefined
    ? { value: config.token, from: 'config.token' }
    : fromEnv('ASKBRIDGE_TOKEN', 'BRIDGE_TOKEN') ?? { value: '', from: '' }
  const token = checkToken(tokenFrom.value, tokenFrom.from)
  return {
    url: url.replace(/\/+$/, ''),
    token,
    tokenFrom: token === '' ? undefined : tokenFrom.from,
    route: routeOf(config.route),
    expiresIn,
    caller: optString(config.caller, 'caller') ?? 'dsh',
    pollWait: seconds(config.pollWait, 'pollWait', 25, 1, 600),
    retryFor: seconds(config.retryFor, 'retryFor', 60, 0, 86400),
    timeout: seconds(config.timeout, 'timeout', 15, 1, 600),
    questions: optBool(config.questions, 'questions', true),
    approvals: optBool(config.approvals, 'approvals', true),
  }
}

// ---------------------------------------------------------------- request shapes

/** The call id of a request: its own, its durable wait's, or a question intent's. */
export function callIdOf (request) {
  const candidates = [request?.callId, request?.wait?.callId]
  for (const q of Array.isArray(request?.questions) ? request.questions : []) candidates.push(q?.intent?.callId)
  for (const c of candidates) {
    if ((typeof c === 'string' && c !== '') || typeof c === 'number') return String(c)
  }
  return undefined
}

/**
 * dsh-llm names a tool call whose provider streamed no id by its place in
 * the response (`call-0`, `call-1`, ...): the same id in every such response,
 * every turn and every session. Such an id does not tell one call from
 * another, so it keys nothing: keyed by it, a later call would re-attach to
 * an earlier call's request and take its answer, or its one-time grant.
 */
const POSITIONAL_CALL_ID = /^call-\d+$/

/** The key of a request on the bridge: its call id when that names one call only. */
function keyOf (callId) {
  return callId === undefined || POSITIONAL_CALL_ID.test(callId) ? undefined : callId
}

/** A tool_call_id that fits the bridge's limit; a long one is hashed, still deterministically. */
function toolCallID (id) {
  if (Buffer.byteLength(id) <= MAX_CALL_ID) return id
  return `sha256:${createHash('sha256').update(id).digest('hex')}`
}

function cut (s, n) {
  s = String(s)
  return s.length > n ? s.slice(0, n) : s
}

function callerOf (agent, name) {
  const caller = {}
  if (agent?.id !== undefined && agent.id !== null) caller.agent = cut(agent.id, MAX_CALLER)
  if (name) caller.name = cut(name, MAX_CALLER)
  const session = agent?.session?.id
  if (session !== undefined && session !== null) caller.session = cut(session, MAX_CALLER)
  return Object.keys(caller).length > 0 ? caller : undefined
}

/** The seam's question fields, and nothing the bridge does not know. */
function questionOf (q) {
  if (q === null || typeof q !== 'object') return q
  const out = { id: q.id, question: q.question }
  if (q.header !== undefined) out.header = q.header
  if (q.detail !== undefined) out.detail = q.detail
  if (Array.isArray(q.options)) {
    out.options = q.options.map((o) => (o?.description === undefined ? { label: o?.label } : { label: o.label, description: o.description }))
  }
  // Both spellings go as sent: the bridge refuses the two disagreeing,
  // where taking either would ask the question as its sender did not mean.
  if (typeof q.multiSelect === 'boolean') out.multiSelect = q.multiSelect
  if (typeof q.multi_select === 'boolean') out.multi_select = q.multi_select
  // An intent changes presentation only, and the seam's tags are open: one
  // the bridge does not know (a newer harness's) is left out, so the person
  // gets the generic option list instead of the bridge refusing it.
  // A plan-review with no plan is shown as the plain question: the bridge
  // refuses the intent without a plan to review, where the seam takes it.
  if (q.intent?.kind === 'plan-review' && typeof q.detail === 'string' && q.detail.trim() !== '') {
    out.intent = { kind: q.intent.kind, approve: q.intent.approve }
  }
  if (q.input !== undefined && q.input !== null) out.input = q.input
  return out
}

/** The answer exactly as the seam has it: {answers: [{id, selected, custom?}]}. */
function answerOf (record) {
  const items = record?.answer?.answers
  if (!Array.isArray(items)) {
    throw new UserQuestionError(`askbridge: question ${record?.id} was answered without an answer`, 'ASKBRIDGE_ERROR')
  }
  return {
    answers: items.map((a) => {
      const item = { id: String(a.id), selected: Array.isArray(a.selected) ? a.selected.map(String) : [] }
      if (typeof a.custom === 'string' && a.custom.trim() !== '') item.custom = a.custom
      return item
    }),
  }
}

// ---------------------------------------------------------------- the answerer

/**
 * Turns harness requests into bridge requests and waits for them. One per
 * plugin instance; `close()` stops every wait (the plugin is unloading).
 */
export class Answerer {
  constructor (options, logger) {
    this.o = options
    this.log = logger
    this.client = new BridgeClient({
      url: options.url,
      token: options.token,
      callTimeoutMs: options.timeout * 1000,
      graceMs: 10_000,
    })
    this.inflight = new Set()
    this.runs = new Set() // settle when their #run has ended
    this.closing = new AbortController() // ends the withdrawals still being retried
    this.withdrawals = new Set() // their promises, for tests to wait on
  }

  /**
   * Stop every wait. Resolves once the withdrawals on their way have ended,
   * or after CLOSE_WAIT_MS: a harness that exits once the plugin is
   * unloaded (an aborted turn, then Ctrl-C) does not cut them off, and a
   * bridge that is slow to take them holds the unload up a bounded while.
   */
  close () {
    for (const stop of [...this.inflight]) stop()
    this.closing.abort(new Error('the askbridge plugin was unloaded'))
    return this.#drain(CLOSE_WAIT_MS)
  }

  async #drain (ms) {
    let timer
    const late = new Promise((resolve) => { timer = setTimeout(resolve, ms) })
    const ended = (async () => {
      await Promise.allSettled([...this.runs]) // each tracks its withdrawal before it ends
      while (this.withdrawals.size > 0) await Promise.allSettled([...this.withdrawals])
    })()
    try {
      await Promise.race([ended, late])
    } finally {
      clearTimeout(timer)
    }
  }

  // -------------------------------------------------------------- questions

  /** Provider API: answer, or reject with the seam's error. */
  async ask (request) {
    const res = await this.#askBridge(request)
    if (res.noProvider) throw new UserQuestionError(SEAM_MESSAGES.NO_PROVIDER, 'NO_PROVIDER', { cause: res.noProvider })
    return res.answer
  }

  /** Waterfall: answer, or next() when no bridge answerer takes it. */
  async askOrNext (request, next) {
    const res = await this.#askBridge(request)
    if (res.noProvider) {
      this.#debug('no answerer on the bridge took the question (%s); handing it to the next answerer', res.noProvider.message)
      return next()
    }
    return res.answer
  }

  async #askBridge (request) {
    if (request?.signal?.aborted) throw questionEnd('ASK_ABORTED', request.signal.reason)
    const body = {
      questions: Array.isArray(request?.questions) ? request.questions.map(questionOf) : [],
      ...this.#common(request?.agent),
    }
    const callId = callIdOf(request)
    try {
      const rec = await this.#run('question', body, callId, request?.signal)
      if (rec.noProvider) return rec
      if (rec.status === 'answered') return { answer: answerOf(rec) }
      const code = rec.error?.code ?? END_CODES[rec.status]
      throw questionEnd(END_CODE_SET.has(code) ? code : 'ASK_ABORTED')
    } catch (err) {
      throw questionError(err, this.o)
    }
  }

  // -------------------------------------------------------------- approvals

  /** 'approval/request' waterfall: 'allowed-once' or 'rejected', or next(). */
  async approve (req, next) {
    if (req?.signal?.aborted) throw approvalEnd('ASK_ABORTED', req.signal.reason)
    const body = {
      tool_name: req?.toolName,
      ...this.#common(req?.agent),
    }
    const callId = req?.callId === undefined || req.callId === null ? undefined : String(req.callId)
    // call_id shows the person which call is decided; one over the bridge's
    // limit is left out (the bridge then shows the tool_call_id, hashed to
    // fit) rather than refusing the approval.
    if (callId !== undefined && Buffer.byteLength(callId) <= MAX_CALL_ID) body.call_id = callId
    if (typeof req?.reason === 'string' && req.reason !== '') body.reason = cut(req.reason, MAX_REASON)
    if (typeof req?.displayReason === 'string' && req.displayReason !== '') body.display_reason = cut(req.displayReason, MAX_REASON)
    // The bridge takes arguments as a JSON object only (as the seam writes
    // them); anything else is left out rather than refusing the approval.
    const args = req?.arguments ?? req?.args
    if (args !== undefined && args !== null && typeof args === 'object' && !Array.isArray(args)) body.arguments = args
    let rec
    try {
      rec = await this.#run('approval', body, callId, req?.signal)
    } catch (err) {
      throw approvalError(err, this.o)
    }
    if (rec.noProvider) {
      this.#debug('no answerer on the bridge took the approval (%s); handing it to the next answerer', rec.noProvider.message)
      return next()
    }
    if (rec.status === 'answered') {
      const outcome = rec.decision?.outcome
      if (outcome === 'allowed-once' || outcome === 'rejected') return outcome
      throw new AskbridgeError(`askbridge: approval ${rec.id} was decided with an unknown outcome ${JSON.stringify(outcome)}`, 'ASKBRIDGE_ERROR')
    }
    // A person who dismisses an approval declines to allow the call.
    if (rec.status === 'dismissed') return 'rejected'
    const code = rec.error?.code ?? END_CODES[rec.status]
    throw approvalEnd(END_CODE_SET.has(code) ? code : 'ASK_ABORTED')
  }

  // -------------------------------------------------------------- the life cycle

  #common (agent) {
    const out = {}
    const caller = callerOf(agent, this.o.caller)
    if (caller) out.caller = caller
    if (this.o.route) out.route = this.o.route
    if (this.o.expiresIn !== undefined) out.expires_in = this.o.expiresIn
    return out
  }

  /**
   * Create the request and long-poll it until it leaves pending. Resolves
   * with the final record, or {noProvider} for 503 NO_PROVIDER (from the
   * create, or from a wait on a request no target took). The turn's
   * signal withdraws the request (DELETE) and rejects with ASK_ABORTED.
   */
  async #run (kind, body, callId, turnSignal) {
    const stop = new AbortController()
    let why // 'turn' | 'unload'
    const onTurn = () => { why ??= 'turn'; stop.abort(turnSignal.reason) }
    const onUnload = () => { why ??= 'unload'; stop.abort(new Error('the askbridge plugin was unloaded')) }
    turnSignal?.addEventListener('abort', onTurn, { once: true })
    this.inflight.add(onUnload)
    let ended
    const run = new Promise((resolve) => { ended = resolve })
    this.runs.add(run)
    const key = keyOf(callId)
    body.tool_call_id = key !== undefined ? toolCallID(key) : newToolCallID()
    let rec
    try {
      rec = await this.#create(kind, body, key, stop.signal)
      if (rec.noProvider) return rec
      this.#debug('%s %s pending (tool_call_id %s)', kind, rec.id, body.tool_call_id)
      return await this.#wait(kind, rec, stop.signal)
    } catch (err) {
      if (!stop.signal.aborted) {
        // The wait gave up, and the call fails: the harness, still running,
        // asks no more under its id, and a retry by the model is a call of
        // its own. Left pending, the request would be answered for nobody.
        if (rec !== undefined && !rec.noProvider) this.#track(this.#withdraw(kind, rec.id))
        throw err
      }
      // Unloaded, a request under its call's key is left for a restarted
      // harness to re-attach to; one under a fresh key can't be. The
      // withdrawal goes on without the call: an aborted turn is freed at
      // once, not after a slow or restarting bridge has taken the DELETE.
      if (why === 'turn' || key === undefined) this.#track(this.#withdraw(kind, rec?.id, rec === undefined ? body : undefined))
      throw kind === 'question' ? questionEnd('ASK_ABORTED', turnSignal?.reason) : approvalEnd('ASK_ABORTED', turnSignal?.reason)
    } finally {
      turnSignal?.removeEventListener('abort', onTurn)
      this.inflight.delete(onUnload)
      this.runs.delete(run)
      ended()
    }
  }

  /**
   * POST the request. A bridge that can't be connected to fails at once; a
   * call that may have reached it is retried under the same tool_call_id,
   * which re-attaches instead of asking twice, and from then on so is one
   * that could not connect (the bridge restarting): given up on, the request
   * that may exist is withdrawn, so that nobody answers it for nothing.
   */
  async #create (kind, body, key, signal) {
    const retry = new Retry(this.o.retryFor)
    let conflictRetried = false
    let maybeSent = false
    let base = key
    let round = 0
    // An approval under a key is looked up before its first create: one
    // decided before this ask is another ask's (a harness re-running the
    // call after a restart asks anew, and logs a new approval), and a grant
    // is for the ask it answered. What a create finds decided after that is
    // this ask's own (a retry whose first reply was lost), whatever the
    // clocks say.
    let lookFirst = kind === 'approval' && base !== undefined
    for (;;) {
      const creating = !lookFirst
      let rec
      try {
        if (lookFirst) {
          const prior = await this.#lookUp(kind, body.tool_call_id, undefined, signal)
          lookFirst = false
          if (prior !== undefined && prior.status !== 'pending' && round < MAX_ROUNDS) {
            // Asked again under a key of its own that a restart finds too.
            round++
            body.tool_call_id = toolCallID(`${base}~${round}`)
            lookFirst = true
          }
          continue
        }
        rec = await this.client.create(kind, body, signal)
      } catch (err) {
        if (signal.aborted) throw err
        if (err instanceof BridgeError && err.code === 'NO_PROVIDER') return { noProvider: err }
        if (err instanceof BridgeError && err.code === 'CONFLICT' && key !== undefined && !conflictRetried) {
          // The call id already names a different request (a second ask in the
          // same tool call): key this one by the call id and its content. The
          // caller is left out, as the bridge leaves it out of its own
          // comparison: a restarted harness asks under a new agent id and must
          // still find this request.
          conflictRetried = true
          const { tool_call_id: _, caller: __, ...rest } = body
          const digest = createHash('sha256').update(JSON.stringify(rest)).digest('hex').slice(0, 16)
          base = `${key}#${digest}`
          round = 0
          body.tool_call_id = toolCallID(base)
          lookFirst = kind === 'approval'
          continue
        }
        const connect = err instanceof NetworkError && err.connect
        if (connect && !maybeSent) throw unreachable(this.o.url, err)
        if (!transient(err)) {
          if (maybeSent) this.#track(this.#giveUp(kind, key, body))
          throw err
        }
        maybeSent ||= creating && !connect
        try {
          await retry.pause(err, signal, this.o.url)
        } catch (gaveUp) {
          if (maybeSent && !signal.aborted) this.#track(this.#giveUp(kind, key, body))
          throw gaveUp
        }
        continue
      }
      return rec
    }
  }

  /** The request under toolCallId, or undefined when there is none. */
  async #lookUp (kind, toolCallId, timeoutMs, signal) {
    try {
      const rec = await this.client.find(kind, toolCallId, timeoutMs, signal)
      return rec.tool_call_id === toolCallId ? rec : undefined
    } catch (err) {
      if (err instanceof BridgeError && err.code === 'NOT_FOUND') return undefined
      throw err
    }
  }

  /** Long-poll until the request leaves pending, riding out a restarting bridge for retryFor. */
  async #wait (kind, rec, signal) {
    const floor = Math.min(this.o.pollWait * 1000, 1000) // no tighter loop than this
    const retry = new Retry(this.o.retryFor)
    while (rec.status === 'pending') {
      const start = Date.now()
      try {
        rec = await this.client.get(kind, rec.id, this.o.pollWait, signal)
        retry.reset()
        if (rec.status === 'pending') await sleep(floor - (Date.now() - start), signal)
      } catch (err) {
        if (signal.aborted) throw err
        // No target took it after all: a create retried while the first
        // was still posting re-attached to a request then discarded.
        if (err instanceof BridgeError && err.code === 'NO_PROVIDER') return { noProvider: err }
        if (!transient(err)) throw err
        await retry.pause(err, signal, this.o.url)
      }
    }
    return rec
  }

  /**
   * DELETE the request the turn no longer waits for. Never throws. A first
   * attempt that fails for a moment (the bridge restarting) goes on in the
   * background for retryFor: a withdrawal is safe to repeat.
   */
  #withdraw (kind, id, body) {
    // Aborted during the create, the request may exist or its create may
    // still be on the way: its tool_call_id withdraws it either way,
    // without asking anyone.
    return this.#persist(`${kind} ${id ?? body?.tool_call_id}`, async () => {
      const rec = id === undefined
        ? await this.#withdrawByToolCall(kind, body)
        : await this.client.cancel(kind, id, 5000)
      this.#debug('%s %s withdrawn: %s', kind, rec.id, rec.status)
    })
  }

  /**
   * After a create given up on that may have made its request. Under a
   * fresh tool_call_id (no key), which nobody will create under again, it
   * is withdrawn by it: that also stops a create still on its way. Under
   * the call's key it is looked up and withdrawn by id when pending: a
   * withdrawal by tool_call_id is recorded even where nothing was made,
   * and the call's next ask would find that instead of asking.
   */
  #giveUp (kind, key, body) {
    if (key === undefined) return this.#withdraw(kind, undefined, body)
    const toolCallId = body.tool_call_id
    return this.#persist(`${kind} ${toolCallId}`, async () => {
      let rec = await this.#lookUp(kind, toolCallId, 5000)
      if (rec?.status !== 'pending') return // never made, or ended
      rec = await this.client.cancel(kind, rec.id, 5000)
      this.#debug('%s %s withdrawn: %s', kind, rec.id, rec.status)
    })
  }

  /** Keeps p in withdrawals until it settles. */
  #track (p) {
    this.withdrawals.add(p)
    p.finally(() => this.withdrawals.delete(p))
  }

  /**
   * Run once(), and again in the background for retryFor while it fails for
   * a moment. Never throws. Unloaded (close), one last try, at once.
   */
  async #persist (what, once) {
    let err
    try {
      return await once()
    } catch (e) {
      err = e
    }
    if (!transient(err) || this.o.retryFor === 0 || this.closing.signal.aborted) {
      this.#warn('could not withdraw %s from %s: %s', what, this.o.url, err.message)
      return
    }
    this.#warn('could not withdraw %s from %s yet (%s); trying again for up to %d s', what, this.o.url, err.message, this.o.retryFor)
    this.#track((async () => {
      const retry = new Retry(this.o.retryFor)
      for (;;) {
        try {
          await retry.pause(err, this.closing.signal, this.o.url)
        } catch (e) {
          if (this.closing.signal.aborted) {
            await once().catch((e) => this.#warn('could not withdraw %s from %s: %s', what, this.o.url, e.message))
          } else {
            this.#warn('could not withdraw %s from %s: %s', what, this.o.url, e.message)
          }
          return
        }
        try {
          return await once()
        } catch (e) {
          if (!transient(e)) {
            this.#warn('could not withdraw %s from %s: %s', what, this.o.url, e.message)
            return
          }
          err = e
        }
      }
    })())
  }

  async #withdrawByToolCall (kind, body) {
    try {
      return await this.client.cancelByToolCall(kind, body.tool_call_id, 5000)
    } catch (err) {
      if (!(err instanceof BridgeError && err.code === 'NOT_FOUND')) throw err
      // A bridge from before 2026-12-03 withdraws only what exists: the
      // same tool_call_id finds the request (or makes it), then it is cancelled.
      return this.client.cancel(kind, (await this.client.create(kind, body)).id, 5000)
    }
  }

  #debug (...args) {
    try { this.log?.debug(...args) } catch {}
  }

  #warn (...args) {
    try { this.log?.warn(...args) } catch {}
  }
}

/**
 * Paces retries: jittered backoff from 250 ms to 5 s, each pause no shorter
 * than a Retry-After asks (up to 5 s), until failures have lasted retryFor seconds.
 */
class Retry {
  constructor (retryFor) {
    this.retryFor = retryFor * 1000
    this.reset()
  }

  reset () {
    this.since = 0
    this.next = 250
  }

  async pause (err, signal, url) {
    if (this.since === 0) this.since = Date.now()
    const lasted = Date.now() - this.since
    if (lasted >= this.retryFor) throw unreachable(url, err, lasted)
    const d = Math.min(retryDelay(this.next / 2 + Math.random() * (this.next / 2), err), this.retryFor - lasted)
    this.next = Math.min(this.next * 2, MAX_BACKOFF_MS)
    await sleep(d, signal)
  }
}

// ---------------------------------------------------------------- errors

function questionEnd (code, cause) {
  return new UserQuestionError(SEAM_MESSAGES[code], code, cause === undefined ? undefined : { cause })
}

function approvalEnd (code, cause) {
  return new AskbridgeError(APPROVAL_MESSAGES[code] ?? APPROVAL_MESSAGES.ASK_ABORTED, code, cause === undefined ? undefined : { cause })
}

/** A marker for "the bridge can't be reached", whatever the kind of request. */
class Unreachable extends Error {}

/**
 * How the error of a bridge that did not answer at all ends: what to check,
 * as the bridge CLI says it. (One that answers 503 while its Redis is away
 * does run there.)
 */
const UNREACHABLE_HINT = "; is `bridge serve` running there? The plugin's url (config.url, else $ASKBRIDGE_URL or $BRIDGE_SERVER) says where it is"

function unreachable (url, err, lasted) {
  const network = err instanceof NetworkError
  const span = lasted === undefined ? '' : ` (still failing after ${Math.round(lasted / 1000)} s)`
  return new Unreachable(`askbridge at ${url} can't be reached: ${network ? err.detail : err.message}${span}${network ? UNREACHABLE_HINT : ''}`, { cause: err })
}

/**
 * The bridge's 403 for a token it knows without the scope a route needs
 * ("this token lacks the ask scope"). Its other 403 FORBIDDENs (an API
 * without tokens refusing a call from elsewhere) are not about the token,
 * so they keep the bridge's wording.
 */
const LACKS_SCOPE = /\blacks the\b.*\bscope\b/

/**
 * What the bridge's error err says, in the plugin's terms where the plugin's
 * config is what to change: a URL at which no bridge API answers, a token
 * missing, refused or without the ask scope (named by where it came from,
 * never shown).
 */
function bridgeSaid (err, o) {
  if (err.wrongURL) return `${err.message}; the plugin's url (config.url, else $ASKBRIDGE_URL or $BRIDGE_SERVER) says where the bridge is`
  const token = o.tokenFrom ?? "the plugin's token"
  const apiTokens = "the bridge's API tokens (api.tokens)"
  if (err.status === 401 && err.code === 'UNAUTHORIZED') {
    if (!o.token) {
      return 'the bridge takes API tokens (api.tokens) and the plugin sent none: '
        + 'set config.token, else $ASKBRIDGE_TOKEN or $BRIDGE_TOKEN, to one with the ask scope'
    }
    return `${err.message}: ${token} is not one of ${apiTokens}`
  }
  if (err.status === 403 && err.code === 'FORBIDDEN' && o.token && LACKS_SCOPE.test(err.message)) {
    return `${err.message}: ${token} is one of ${apiTokens} but not one with the ask scope the plugin needs: `
      + `set ${token} to a token with scopes [ask] there`
  }
  return err.message
}

function questionError (err, o) {
  const url = o.url
  if (err instanceof UserQuestionError) return err
  if (err instanceof Unreachable) return new UserQuestionError(err.message, 'ASKBRIDGE_UNREACHABLE', { cause: err.cause })
  if (err instanceof BridgeError) {
    const code = seamCode(err.code)
    if (SEAM_CODES.has(code)) return new UserQuestionError(SEAM_MESSAGES[code] ?? err.message, code, { cause: err })
    return withBridge(new UserQuestionError(`askbridge at ${url}: ${bridgeSaid(err, o)}`, 'ASKBRIDGE_ERROR', { cause: err }), err)
  }
  if (err instanceof NetworkError) return new UserQuestionError(`askbridge at ${url} can't be reached: ${err.detail}${UNREACHABLE_HINT}`, 'ASKBRIDGE_UNREACHABLE', { cause: err })
  return new UserQuestionError(`askbridge: ${err?.message ?? err}`, 'ASKBRIDGE_ERROR', { cause: err })
}

function approvalError (err, o) {
  const url = o.url
  if (err instanceof AskbridgeError) return err
  if (err instanceof Unreachable) return new AskbridgeError(err.message, 'ASKBRIDGE_UNREACHABLE', { cause: err.cause })
  if (err instanceof BridgeError) {
    const code = SEAM_CODES.has(seamCode(err.code)) ? seamCode(err.code) : 'ASKBRIDGE_ERROR'
    return withBridge(new AskbridgeError(`askbridge at ${url}: ${bridgeSaid(err, o)}`, code, { cause: err }), err)
  }
  if (err instanceof NetworkError) return new AskbridgeError(`askbridge at ${url} can't be reached: ${err.detail}${UNREACHABLE_HINT}`, 'ASKBRIDGE_UNREACHABLE', { cause: err })
  return new AskbridgeError(`askbridge: ${err?.message ?? err}`, 'ASKBRIDGE_ERROR', { cause: err })
}

function withBridge (e, bridgeErr) {
  e.status = bridgeErr.status
  e.bridgeCode = bridgeErr.code || undefined
  return e
}

// ---------------------------------------------------------------- the plugin

function loggerOf (ctx) {
  try {
    return typeof ctx.logger === 'function' ? ctx.logger('askbridge') : ctx.logger
  } catch {
    return undefined
  }
}

/**
 * Install askbridge as the answerer of `ctx`.
 * @param {import('@deepseek-ai/cordis').Context} ctx
 * @param {import('./index.js').Config} [config]
 */
export function apply (ctx, config) {
  const options = resolveConfig(config)
  const log = loggerOf(ctx)
  const answerer = new Answerer(options, log)
  ctx.effect(() => () => answerer.close(), 'askbridge: stop waiting')

  if (options.questions) {
    ctx.inject(['userQuestions'], (ctx) => {
      const service = ctx.userQuestions
      if (typeof service?.registerProvider === 'function') {
        // dsh-user-questions 0.1.0-rc.8: the one provider.
        ctx.effect(() => service.registerProvider({ ask: (request) => answerer.ask(request) }),
          'askbridge: userQuestions.registerProvider()')
        try { log?.info('answering user questions through %s (provider)', options.url) } catch {}
      } else {
        // Newer harnesses: first in the answerer waterfall.
        ctx.on('user-questions/request', (request, next) => answerer.askOrNext(request, next), { prepend: true })
        try { log?.info('answering user questions through %s (waterfall)', options.url) } catch {}
      }
    })
  }
  if (options.approvals) {
    ctx.on('approval/request', (req, next) => answerer.approve(req, next), { prepend: true })
  }
}

export default { name, apply }
