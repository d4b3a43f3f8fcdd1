// Test support: build the real bridge (go build), run it (`bridge serve` with
// its embedded Redis), and answer through its answer API like a person would.

import { spawn, execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')

export const ASK_TOKEN = 'dsh-test-ask-token-3f9c2a'
export const ANSWER_TOKEN = 'dsh-test-answer-token-8d1e7b'

/** The environment variable by which test/run.js hands the files its build. */
export const BUILT_BRIDGE = 'ASKBRIDGE_TEST_BRIDGE_BIN'

function goBinary () {
  if (process.env.GO) return process.env.GO
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, 'go'))) return join(dir, 'go')
  }
  if (existsSync('/usr/local/go/bin/go')) return '/usr/local/go/bin/go'
  throw new Error('go not found: put it on PATH or set GO')
}

/**
 * `go build ./cmd/bridge` into a temp dir; resolves with {bin, dir}. Under
 * test/run.js (npm test), which builds it once for every file, the dir is
 * the file's own and bin is that build.
 */
export async function buildBridge () {
  const dir = await mkdtemp(join(tmpdir(), 'askbridge-dsh-test-'))
  if (process.env[BUILT_BRIDGE]) return { bin: process.env[BUILT_BRIDGE], dir }
  const bin = join(dir, 'bridge')
  await promisify(execFile)(goBinary(), ['build', '-o', bin, './cmd/bridge'], {
    cwd: repo,
    timeout: 180_000,
    maxBuffer: 16 << 20,
  })
  return { bin, dir }
}

/** A config with two clients: the plugin (ask) and the test's answerer (answer). */
export async function writeConfig (dir, extra = '') {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}.yaml`)
  await writeFile(file, [
    'api:',
    '  tokens:',
    '    - name: dsh',
    `      token: ${ASK_TOKEN}`,
    '      scopes: [ask]',
    '    - name: tester',
    `      token: ${ANSWER_TOKEN}`,
    '      scopes: [answer]',
    'store:',
    '  sweep_interval: 100ms',
    '  max_wait: 30s',
    'log:',
    '  level: debug',
    extra,
  ].join('\n'))
  return file
}

/**
 * Start `bridge serve --listen 127.0.0.1:0` and resolve once it logs the
 * address it listens on. stop() kills it and waits for it to exit.
 */
export async function startBridge (bin, config) {
  const args = ['serve', '--listen', '127.0.0.1:0']
  if (config) args.push('--config', config)
  const proc = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })))
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the bridge did not start within 20 s:\n${stderr}`)), 20_000)
    proc.stderr.setEncoding('utf8')
    proc.stderr.on('data', (chunk) => {
      stderr += chunk
      const m = /askbridge listening"? addr=(\S+)/.exec(stderr)
      if (m) {
        clearTimeout(timer)
        resolve(`http://${m[1]}`)
      }
    })
    proc.once('error', (err) => { clearTimeout(timer); reject(err) })
    exited.then(({ code, signal }) => {
      clearTimeout(timer)
      reject(new Error(`the bridge exited (${code ?? signal}) before listening:\n${stderr}`))
    })
  })
  return {
    url,
    proc,
    get stderr () { return stderr },
    async stop () {
      if (proc.exitCode !== null || proc.signalCode !== null) return
      proc.kill('SIGTERM')
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(t)
    },
  }
}

/** A loopback port nothing listens on (bound, then closed). */
export async function closedPort () {
  const srv = createServer()
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const { port } = srv.address()
  await new Promise((resolve) => srv.close(resolve))
  return port
}

export async function cleanup (dir) {
  if (dir) await rm(dir, { recursive: true, force: true })
}

/** The person on the other side: lists, answers, decides and dismisses through the answer API. */
export class Person {
  constructor (url, token = ANSWER_TOKEN) {
    this.url = url
    this.token = token
  }

  async call (method, path, body) {
    const resp = await fetch(this.url + path, {
      method,
      headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const data = await resp.json()
    if (!resp.ok) throw new Error(`${method} ${path}: HTTP ${resp.status} ${JSON.stringify(data)}`)
    return data
  }

  /**
   * Poll the pending list until a request matching `match` shows up; fail
   * after `timeoutMs`. No fixed sleeps: 20 ms between polls.
   */
  async waitPending (kind, match, timeoutMs = 10_000) {
    const key = kind === 'approval' ? 'approvals' : 'questions'
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const list = (await this.call('GET', `/v1/${key}?status=pending`))[key]
      const rec = list.find(match)
      if (rec) return rec
      if (Date.now() > deadline) throw new Error(`no pending ${kind} matched within ${timeoutMs} ms; pending: ${JSON.stringify(list)}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  /** The pending question whose first question's text is `text`. */
  question (text, timeoutMs) {
    return this.waitPending('question', (r) => r.questions?.some((q) => q.question === text), timeoutMs)
  }

  approval (toolName, timeoutMs) {
    return this.waitPending('approval', (r) => r.tool_name === toolName, timeoutMs)
  }

  /** askbridge_requests_created_total for a kind, all routes together. */
  async created (kind) {
    const text = await (await fetch(`${this.url}/metrics`)).text()
    let sum = 0
    for (const m of text.matchAll(/^askbridge_requests_created_total\{([^}]*)\} (\S+)$/gm)) {
      if (m[1].includes(`kind="${kind}"`)) sum += Number(m[2])
    }
    return sum
  }

  get (kind, id) {
    return this.call('GET', `/v1/${kind === 'approval' ? 'approvals' : 'questions'}/${id}`)
  }

  answer (id, answers) {
    return this.call('POST', `/v1/questions/${id}/answer`, { answers })
  }

  decide (id, decision) {
    return this.call('POST', `/v1/approvals/${id}/decision`, decision)
  }

  dismiss (kind, id) {
    return this.call('POST', `/v1/${kind === 'approval' ? 'approvals' : 'questions'}/${id}/dismiss`)
  }
}

/** A unique question text per test, so tests never pick up each other's requests. */
let n = 0
export function unique (text) {
  return `${text} [${process.pid}-${++n}-${Math.random().toString(36).slice(2, 7)}]`
}

/** Reject if `promise` has not settled within `ms`. */
export function within (promise, ms, what) {
  let timer
  return Promise.race([
    promise,
    new Promise((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms) }),
  ]).finally(() => clearTimeout(timer))
}
