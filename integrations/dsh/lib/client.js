// A small client of askbridge's HTTP API (docs/api.md): create a request,
// long-poll it until it ends, withdraw it. No dependencies: Node's fetch.

import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'

/**
 * Network errors after which the request may have reached the bridge (the
 * connection broke or timed out mid-call). Any other failure (refused, no
 * such host, a connect timeout, TLS, a bad port) means nothing was sent.
 */
const MAYBE_SENT = new Set([
  'ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED',
  'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'TIMEOUT',
])

/**
 * Network errors that say the connection was closed before a response
 * came: what a bridge that stops mid-call does, and also what a database
 * does with HTTP (Redis, Postgres).
 */
const CLOSED = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET'])

/** The longest BridgeClient waits for the answer to its GET of /healthz. */
const PROBE_TIMEOUT_MS = 5000

/** The longest pause between retries: the backoff grows to it, and a Retry-After is cut to it. */
export const MAX_BACKOFF_MS = 5000

/**
 * An error the bridge answered with: `{"error": {"code", "message"}}` and its
 * HTTP status, or a body that is not one (a proxy's error page).
 */
export class BridgeError extends Error {
  constructor (status, code, message, retryAfter = 0, wrongURL = false) {
    super(message)
    this.name = 'BridgeError'
    this.status = status
    this.code = code
    /** The response's Retry-After, in ms; 0 without one. */
    this.retryAfter = retryAfter
    /** True when the response shows that no bridge API answers at the URL. */
    this.wrongURL = wrongURL
  }
}

/** How an error that says the URL reaches no bridge's API begins, as the Go client's does. */
export const WRONG_URL = 'wrong bridge URL'

/**
 * The error of an error status whose body is not the bridge's JSON error:
 * a reply from a proxy in front of the bridge, or from something in its
 * place. The body is not shown (a web server's page says nothing to the
 * model reading the error). As the Go client has it, a 404, 405 or 501 is a
 * web server that has no bridge API, and a 400 that asks for HTTPS is a TLS
 * server at an http:// URL: the URL is wrong.
 */
function notTheBridge (resp, text, base) {
  const status = resp.status
  const what = [`HTTP ${status}`, STATUS_CODES[status]].filter(Boolean).join(' ')
  if (status === 404 || status === 405 || status === 501) {
    return new BridgeError(status, '', `${WRONG_URL}: what answers there has no bridge API (${what})`, 0, true)
  }
  if (status === 400 && /https/i.test(text) && base.startsWith('http:')) {
    return new BridgeError(status, '', `${WRONG_URL}: what answers there takes HTTPS: use https:${base.slice('http:'.length)}`, 0, true)
  }
  return new BridgeError(status, '', `${what}, not from the bridge (the reply is not its JSON error)`, retryAfter(resp.headers))
}

/** A call that never got an HTTP response: refused, reset, timed out. */
export class NetworkError extends Error {
  constructor (message, cause, code, detail) {
    super(message, { cause })
    this.name = 'NetworkError'
    this.code = code
    /** What went wrong, without the method and URL. */
    this.detail = detail ?? message
    /**
     * True when the connection itself failed, so nothing was sent, or when
     * what is at the URL is no bridge (WRONG_URL), so nothing was asked.
     */
    this.connect = !MAYBE_SENT.has(code)
  }
}

/** The code (ECONNREFUSED, ...) and the innermost message of a fetch failure. */
function networkCause (err) {
  let code, message
  for (let e = err, i = 0; e && i < 6; e = e.cause, i++) {
    if (e.name === 'TimeoutError') code ??= 'TIMEOUT'
    if (typeof e.code === 'string' && !code) code = e.code
    if (e instanceof AggregateError && e.errors?.length) e = { cause: e.errors[0], message: e.message }
    if (typeof e.message === 'string' && e.message !== '') message = e.message
  }
  return { code, message: message ?? String(err) }
}

/**
 * The error of a redirect, naming its target (without its query or any
 * user name or password) and, when the target ends in the path asked for,
 * the url to configure instead.
 */
function redirected (resp, method, path, url) {
  let to = 'an address that is not a URL'
  let fix = 'set url to the address the bridge answers at itself'
  try {
    const u = new URL(resp.headers.get('location') ?? '', url)
    to = u.origin + u.pathname
    if (u.pathname.endsWith(path)) fix = `set url to ${u.origin + u.pathname.slice(0, -path.length)}`
  } catch {}
  return new BridgeError(resp.status, '', `HTTP ${resp.status} redirects ${method} ${path} to ${to}: ${fix}`)
}

/**
 * A response's Retry-After in ms (the bridge's 503 UNAVAILABLE sends 1 s,
 * and so may a proxy's 429 or 503), or 0 without one. The HTTP-date form
 * is not read: a wait that long is past the retries' own.
 */
function retryAfter (headers) {
  const value = headers.get('retry-after') ?? ''
  if (!/^\d+$/.test(value)) return 0
  return Number(value) * 1000
}

/**
 * The pause before the next try after err, given the backoff's (jittered):
 * the Retry-After err came with where that is longer, up to MAX_BACKOFF_MS.
 * Sooner than the bridge (or a proxy) asked would be answered alike; later
 * than the longest backoff would outwait the retries' own pace.
 */
export function retryDelay (backoff, err) {
  const asked = err instanceof BridgeError ? err.retryAfter : 0
  return asked > backoff ? Math.min(asked, MAX_BACKOFF_MS) : backoff
}

/** Whether a failed call may succeed if made again. */
export function transient (err) {
  if (err instanceof NetworkError) return err.code !== 'WRONG_URL'
  if (err instanceof BridgeError) {
    if (err.status === 429 || err.status === 502 || err.status === 504) return true
    if (err.status === 503) return err.code !== 'NO_PROVIDER'
  }
  return false
}

/** A fresh tool_call_id for a request that has no call id of its own. */
export function newToolCallID () {
  return `askbridge-dsh-${randomUUID()}`
}

function collection (kind) {
  return kind === 'approval' ? '/v1/approvals' : '/v1/questions'
}

/**
 * Sleep `ms`, or until `signal` aborts (then reject with its reason).
 */
export function sleep (ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    if (ms <= 0) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
    const onAbort = () => { done(); reject(signal.reason) }
    const timer = setTimeout(() => { done(); resolve() }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

export class BridgeClient {
  /**
   * @param {object} o
   * @param {string} o.url - base URL, e.g. http://127.0.0.1:8080
   * @param {string} [o.token] - Bearer token with the ask scope
   * @param {number} o.callTimeoutMs - deadline of a call that does not long-poll
   * @param {number} o.graceMs - beyond a long-poll's wait before the client gives up on it
   */
  constructor ({ url, token, callTimeoutMs, graceMs }) {
    this.base = url.replace(/\/+$/, '')
    this.token = token
    this.callTimeoutMs = callTimeoutMs
    this.graceMs = graceMs
    // Set once a call got an HTTP response: something that speaks HTTP is
    // at the URL, and a connection closed without a response is a bridge
    // stopping (see #closesAgain).
    this.answered = false
  }

  /** One call; resolves with the decoded 2xx body, rejects with BridgeError or NetworkError. */
  async call (method, path, { body, query, timeoutMs, signal } = {}) {
    const url = this.base + path + (query ? `?${new URLSearchParams(query)}` : '')
    const headers = { accept: 'application/json', 'user-agent': 'askbridge-dsh' }
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (this.token) headers.authorization = `Bearer ${this.token}`
    const deadline = AbortSignal.timeout(timeoutMs ?? this.callTimeoutMs)
    const signals = signal ? AbortSignal.any([signal, deadline]) : deadline
    let resp, text
    try {
      resp = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signals,
        // Followed, a redirect turns a POST into a GET and, to another
        // origin (http to https), drops the token: the bridge's answer
        // would be a 401 for a token that was sent.
        redirect: 'manual',
      })
      this.answered = true
      text = await resp.text()
    } catch (err) {
      if (signal?.aborted) throw signal.reason
      const { code, message } = deadline.aborted ? { code: 'TIMEOUT' } : networkCause(err)
      if (CLOSED.has(code) && !this.answered && await this.#closesAgain(signal)) {
        const why = 'what is there closed the connection without an HTTP response, and so it did to a GET /healthz sent to check: '
          + 'no bridge, nor a proxy in front of one (a database, say)'
        throw new NetworkError(`${method} ${this.base}${path}: ${why}`, err, 'WRONG_URL', why)
      }
      const why = code === 'TIMEOUT'
        ? `no response within ${(timeoutMs ?? this.callTimeoutMs) / 1000} s`
        : code !== undefined && message.includes(code) ? message : [code, message].filter(Boolean).join(' ')
      throw new NetworkError(`${method} ${this.base}${path}: ${why}`, err, code ?? (resp === undefined ? undefined : 'ECONNRESET'), why)
    }
    let data
    try {
      data = text === '' ? undefined : JSON.parse(text)
    } catch {
      data = undefined
    }
    if (resp.status >= 300 && resp.status <= 399) throw redirected(resp, method, path, url)
    if (resp.status < 200 || resp.status > 299) {
      const e = data?.error
      if (e && typeof e.code === 'string' && e.code !== '') {
        throw new BridgeError(resp.status, e.code, String(e.message ?? e.code), retryAfter(resp.headers))
      }
      throw notTheBridge(resp, text, this.base)
    }
    if (data === undefined || typeof data !== 'object') {
      const type = resp.headers.get('content-type') ?? ''
      if (!type.startsWith('application/json')) {
        // A web server, not the API: it answers every path.
        throw new BridgeError(resp.status, '', `${WRONG_URL}: what answers there replied to ${method} ${path} with ${type.split(';')[0] || 'no Content-Type'}, not the bridge's JSON`, 0, true)
      }
      throw new BridgeError(resp.status, '', `${method} ${path}: the bridge answered HTTP ${resp.status} without a JSON object`)
    }
    return data
  }

  /**
   * Whether what is at the URL, which closed a call's connection without a
   * response before anything there had answered in HTTP, closes a GET of
   * /healthz (the bridge's liveness, which needs no token) without one
   * too, or answers it in something other than HTTP: then it is no bridge.
   * A bridge that stopped is gone (the connection is refused) or back (it
   * answers); a response of any kind, a refused connection or no answer
   * within PROBE_TIMEOUT_MS is not that.
   */
  async #closesAgain (signal) {
    const deadline = AbortSignal.timeout(PROBE_TIMEOUT_MS)
    try {
      const resp = await fetch(this.base + '/healthz', {
        headers: { 'user-agent': 'askbridge-dsh' },
        signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
        redirect: 'manual',
      })
      this.answered = true
      await resp.body?.cancel()
      return false
    } catch (err) {
      if (signal?.aborted || deadline.aborted) return false
      const { code } = networkCause(err)
      return CLOSED.has(code) || code?.startsWith('HPE_') === true
    }
  }

  /** POST a request (no wait: the record comes back at once, usually pending). */
  create (kind, body, signal) {
    return this.call('POST', collection(kind), { body, signal })
  }

  /** GET a request, held up to `waitSeconds` until it leaves pending. */
  get (kind, id, waitSeconds, signal) {
    return this.call('GET', `${collection(kind)}/${encodeURIComponent(id)}`, {
      query: waitSeconds > 0 ? { wait: `${waitSeconds}s` } : undefined,
      timeoutMs: waitSeconds * 1000 + this.graceMs,
      signal,
    })
  }

  /** DELETE: withdraw a request (status cancelled). Idempotent. */
  cancel (kind, id, timeoutMs) {
    return this.call('DELETE', `${collection(kind)}/${encodeURIComponent(id)}`, { timeoutMs })
  }

  /** GET the caller's request created under toolCallId, without creating it (404 NOT_FOUND when none). */
  find (kind, toolCallId, timeoutMs, signal) {
    return this.call('GET', collection(kind), { query: { tool_call_id: toolCallId }, timeoutMs, signal })
  }

  /**
   * DELETE by tool_call_id: withdraw the request created under it, or, when
   * its create has not landed yet, keep that create from asking anyone (the
   * bridge records it withdrawn, and the create finds it cancelled).
   */
  cancelByToolCall (kind, toolCallId, timeoutMs) {
    return this.call('DELETE', collection(kind), { query: { tool_call_id: toolCallId }, timeoutMs })
  }
}
