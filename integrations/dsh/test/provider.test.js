// dsh-user-questions@0.1.0-rc.8: the real UserQuestionService on a real cordis
// Context, askbridge registered as its one provider, a real bridge process
// answered through its answer API.

import assert from 'node:assert/strict'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { readFile, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import { connect, createServer as createTCPServer } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { Context } from '@deepseek-ai/cordis'
import { UserQuestionError, UserQuestionService } from '@deepseek-ai/dsh-user-questions'
import askbridge, { SEAM_MESSAGES } from '../lib/index.js'
import {
  ANSWER_TOKEN, ASK_TOKEN, Person, buildBridge, cleanup, closedPort, startBridge, unique, within, writeConfig,
} from './bridge.js'

let build, config, bridge, person

/** Mark a promise handled now; the test awaits it later. */
function track (promise) {
  promise.catch(() => {})
  return promise
}

const contexts = []

/** A root Context with the rc.8 seam and askbridge as its provider. */
async function harness (options = {}) {
  const ctx = new Context()
  contexts.push(ctx)
  await ctx.plugin(UserQuestionService)
  await ctx.plugin(askbridge, { url: bridge.url, token: ASK_TOKEN, pollWait: 5, ...options })
  // The provider is registered once the userQuestions service is injected.
  const deadline = Date.now() + 5000
  while (ctx.userQuestions.provider === undefined) {
    if (Date.now() > deadline) throw new Error('askbridge did not register as the userQuestions provider')
    await new Promise((resolve) => setImmediate(resolve))
  }
  return ctx
}

/**
 * Run fn with $ASKBRIDGE_TOKEN and $BRIDGE_TOKEN as vars has them (unset
 * where it has not), whatever the environment the tests run in holds.
 */
async function withoutTokenEnv (vars, fn) {
  const names = ['ASKBRIDGE_TOKEN', 'BRIDGE_TOKEN']
  const saved = Object.fromEntries(names.map((k) => [k, process.env[k]]))
  for (const k of names) delete process.env[k]
  Object.assign(process.env, vars)
  try {
    return await fn()
  } finally {
    for (const k of names) {
      if (saved[k] === undefined) delete process.env[k]
      else process.env[k] = saved[k]
    }
  }
}

/** Assert `promise` rejects with the seam's UserQuestionError of `code` (and `message`, when given). */
async function rejectsWith (promise, code, message, ms = 15_000) {
  const err = await within(promise.then(
    (v) => { throw new Error(`expected ${code}, got an answer: ${JSON.stringify(v)}`) },
    (e) => e,
  ), ms, `the ${code} rejection`)
  assert.ok(err instanceof UserQuestionError, `expected a UserQuestionError, got ${err?.stack ?? err}`)
  assert.equal(err.code, code, err.message)
  if (message !== undefined) assert.equal(err.message, message)
  return err
}

before(async () => {
  build = await buildBridge()
  config = await writeConfig(build.dir)
  bridge = await startBridge(build.bin, config)
  person = new Person(bridge.url)
})

after(async () => {
  for (const ctx of contexts) await ctx.fiber.dispose()
  await bridge?.stop()
  await cleanup(build?.dir)
})

describe('provider API (dsh-user-questions 0.1.0-rc.8)', () => {
  let ctx
  before(async () => { ctx = await harness() })

  test('registers as the provider and not on the waterfall', async () => {
    const terminal = () => Promise.resolve('terminal')
    assert.equal(await ctx.waterfall('user-questions/request', { questions: [] }, terminal), 'terminal')
  })

  test('single select: the answer is exactly the seam shape', async () => {
    const text = unique('Deploy v2.3 to prod?')
    const asking = track(ctx.userQuestions.ask({
      questions: [{
        id: 'deploy',
        question: text,
        header: 'Deploy',
        options: [{ label: 'Yes, ship it (Recommended)', description: 'ships v2.3' }, { label: 'No' }],
      }],
    }))
    const rec = await person.question(text)
    assert.equal(rec.status, 'pending')
    assert.deepEqual(rec.questions, [{
      id: 'deploy',
      question: text,
      header: 'Deploy',
      options: [{ label: 'Yes, ship it (Recommended)', description: 'ships v2.3' }, { label: 'No' }],
    }])
    assert.match(rec.tool_call_id, /^askbridge-dsh-/, 'a request without a call id gets a fresh tool_call_id')
    assert.deepEqual(rec.caller, { name: 'dsh' })
    await person.answer(rec.id, [{ id: 'deploy', selected: ['Yes, ship it (Recommended)'] }])
    const answer = await within(asking, 10_000, 'ask')
    assert.deepStrictEqual(answer, { answers: [{ id: 'deploy', selected: ['Yes, ship it (Recommended)'] }] })
  })

  test('multi select, with custom text beside the labels, in the options\' order', async () => {
    const text = unique('Which environments?')
    const asking = track(ctx.userQuestions.ask({
      questions: [{
        id: 'envs',
        question: text,
        multiSelect: true,
        options: [{ label: 'dev' }, { label: 'staging' }, { label: 'prod' }],
      }],
    }))
    const rec = await person.question(text)
    assert.equal(rec.questions[0].multiSelect, true)
    await person.answer(rec.id, [{ id: 'envs', selected: ['prod', 'dev'], custom: ' and the canary ' }])
    assert.deepStrictEqual(await within(asking, 10_000, 'ask'), {
      answers: [{ id: 'envs', selected: ['dev', 'prod'], custom: 'and the canary' }],
    })
  })

  test('the model-facing multi_select spelling is a multi-select too', async () => {
    const text = unique('Pick any')
    const asking = track(ctx.userQuestions.ask({
      questions: [{ id: 'm', question: text, multi_select: true, options: [{ label: 'a' }, { label: 'b' }] }],
    }))
    const rec = await person.question(text)
    assert.equal(rec.questions[0].multiSelect, true)
    await person.answer(rec.id, [{ id: 'm', selected: ['a', 'b'] }])
    assert.deepStrictEqual(await within(asking, 10_000, 'ask'), { answers: [{ id: 'm', selected: ['a', 'b'] }] })
  })

  test('custom text on a single select overrides the selection', async () => {
    const text = unique('Which branch?')
    const asking = track(ctx.userQuestions.ask({
      questions: [{ id: 'branch', question: text, options: [{ label: 'main' }, { label: 'release' }] }],
    }))
    const rec = await person.question(text)
    await person.answer(rec.id, [{ id: 'branch', selected: ['main'], custom: '  hotfix/42  ' }])
    assert.deepStrictEqual(await within(asking, 10_000, 'ask'), {
      answers: [{ id: 'branch', selected: [], custom: 'hotfix/42' }],
    })
  })

  test('skipped questions come back as {id, selected: []}, in request order', async () => {
    const text = unique('Name the release')
    const asking = track(ctx.userQuestions.ask({
      questions: [
        { id: 'name', question: text },
        { id: 'notes', question: 'Release notes?', options: [{ label: 'Generate' }, { label: 'Skip' }] },
        { id: 'tag', question: 'Tag it?', options: [{ label: 'Yes' }, { label: 'No' }] },
      ],
    }))
    const rec = await person.question(text)
    // Answered out of order, one question left out, one sent as a skip.
    await person.answer(rec.id, [{ id: 'tag', selected: [] }, { id: 'name', selected: [], custom: 'Aurora' }])
    const answer = await within(asking, 10_000, 'ask')
    assert.deepStrictEqual(answer, {
      answers: [
        { id: 'name', selected: [], custom: 'Aurora' },
        { id: 'notes', selected: [] },
        { id: 'tag', selected: [] },
      ],
    })
    assert.equal(Object.hasOwn(answer.answers[1], 'custom'), false)
  })

  test('plan-review: the plan and its intent reach the bridge; feedback comes back as custom', async () => {
    const text = unique('Approve this plan?')
    const plan = '# Plan\n\n1. Add the index\n2. Backfill\n3. Switch reads'
    const asking = track(ctx.userQuestions.ask({
      questions: [{
        id: 'plan',
        question: text,
        detail: plan,
        options: [{ label: 'Approve' }, { label: 'Keep planning' }],
        intent: { kind: 'plan-review', approve: 'Approve' },
      }],
    }))
    const rec = await person.question(text)
    assert.equal(rec.questions[0].detail, plan)
    assert.deepEqual(rec.questions[0].intent, { kind: 'plan-review', approve: 'Approve' })
    await person.answer(rec.id, [{ id: 'plan', selected: ['Keep planning'], custom: 'Backfill in batches of 1k' }])
    assert.deepStrictEqual(await within(asking, 10_000, 'ask'), {
      answers: [{ id: 'plan', selected: [], custom: 'Backfill in batches of 1k' }],
    })

    const text2 = unique('Approve the revised plan?')
    const asking2 = track(ctx.userQuestions.ask({
      questions: [{
        id: 'plan',
        question: text2,
        detail: plan,
        options: [{ label: 'Approve' }, { label: 'Keep planning' }],
        intent: { kind: 'plan-review', approve: 'Approve' },
      }],
    }))
    await person.answer((await person.question(text2)).id, [{ id: 'plan', selected: ['Approve'] }])
    assert.deepStrictEqual(await within(asking2, 10_000, 'ask'), { answers: [{ id: 'plan', selected: ['Approve'] }] })
  })

  test('a request over the 1 MiB body limit is INVALID_REQUEST, as the seam names sizes over the limits', async () => {
    const err = await rejectsWith(track(ctx.userQuestions.ask({
      questions: [{ id: 'big', question: unique('Review this?'), detail: 'x'.repeat(1_100_000) }],
    })), 'INVALID_REQUEST')
    assert.match(err.message, /1 MiB/)
  })

  test('an intent kind the bridge does not know is presented as the generic question, not refused', async () => {
    // The seam's intent tags are open ("a UI that does not know a tag renders
    // the generic flow"); rc.8's ask() checks approve and detail, not the kind.
    const text = unique('Drop the old table?')
    const asking = track(ctx.userQuestions.ask({
      questions: [{
        id: 'drop',
        question: text,
        detail: 'DROP TABLE events_2019',
        options: [{ label: 'Drop it' }, { label: 'Keep it' }],
        intent: { kind: 'destructive-review', approve: 'Drop it' },
      }],
    }))
    const rec = await person.question(text)
    assert.equal(rec.questions[0].intent, undefined)
    assert.equal(rec.questions[0].detail, 'DROP TABLE events_2019')
    await person.answer(rec.id, [{ id: 'drop', selected: ['Keep it'] }])
    assert.deepStrictEqual(await within(asking, 10_000, 'ask'), { answers: [{ id: 'drop', selected: ['Keep it'] }] })
  })

  test('the turn aborted mid-wait: the bridge request is cancelled, ASK_ABORTED', async () => {
    const text = unique('Proceed with the cleanup?')
    const turn = new AbortController()
    const asking = track(ctx.userQuestions.ask({
      questions: [{ id: 'cleanup', question: text, options: [{ label: 'Yes' }, { label: 'No' }] }],
      signal: turn.signal,
    }))
    const rec = await person.question(text)
    turn.abort(new Error('turn interrupted'))
    await rejectsWith(asking, 'ASK_ABORTED', SEAM_MESSAGES.ASK_ABORTED, 5000)
    // The withdrawal goes on after the call is freed: wait for it to land.
    const deadline = Date.now() + 5000
    let after
    while ((after = await person.get('question', rec.id)).status === 'pending' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.equal(after.status, 'cancelled')
    assert.deepEqual(after.error, { code: 'ASK_ABORTED', message: 'ask_user_question was aborted before the user answered' })
  })

  test('dismissed by the person: ASK_CANCELLED with the seam message', async () => {
    const text = unique('Rotate the keys now?')
    const asking = track(ctx.userQuestions.ask({ questions: [{ id: 'rotate', question: text }] }))
    const rec = await person.question(text)
    await person.dismiss('question', rec.id)
    await rejectsWith(asking, 'ASK_CANCELLED', 'the user cancelled ask_user_question')
  })

  test('multiSelect and multi_select that disagree are refused, not read as either', async () => {
    const err = await rejectsWith(track(ctx.userQuestions.ask({
      questions: [{ id: 'm', question: unique('Pick?'), multiSelect: false, multi_select: true, options: [{ label: 'a' }, { label: 'b' }] }],
    })), 'INVALID_REQUEST')
    assert.match(err.message, /multi_select/)
  })

  test('the bridge refuses a malformed request with the seam code', async () => {
    const err = await rejectsWith(track(ctx.userQuestions.ask({
      questions: [{ id: 'dup', question: unique('Dup?'), options: [{ label: 'A' }, { label: 'A' }] }],
    })), 'INVALID_REQUEST')
    assert.match(err.message, /label/i)
  })
})

describe('provider API: ends without an answer', () => {
  test('expired: ASK_TIMED_OUT with the seam message', async () => {
    const ctx = await harness({ expiresIn: '1s' })
    const text = unique('Anyone there?')
    const asking = track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: text }] }))
    const rec = await person.question(text)
    assert.ok(rec.expires_at, 'the request carries its expiry')
    await rejectsWith(asking, 'ASK_TIMED_OUT', 'ask_user_question timed out before the user answered', 10_000)
  })

  test('no answerer on the bridge (503 NO_PROVIDER): the seam NO_PROVIDER error', async () => {
    const ctx = await harness({ route: 'nowhere' })
    const text = unique('Nobody takes this')
    await rejectsWith(track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: text }] })),
      'NO_PROVIDER', 'no user-questions answerer accepted the request', 5000)
    const pending = await person.call('GET', '/v1/questions?status=pending')
    assert.equal(pending.questions.some((r) => r.questions[0].question === text), false, 'nothing is left behind')
  })

  test('a bad token is a clear error, not a hang', async () => {
    const ctx = await harness({ token: 'not-a-token' })
    const err = await rejectsWith(track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: unique('Auth?') }] })),
      'ASKBRIDGE_ERROR', undefined, 5000)
    assert.equal(err.status, 401)
    assert.equal(err.bridgeCode, 'UNAUTHORIZED')
    assert.equal(err.message, `askbridge at ${bridge.url}: the bearer token is not valid: config.token is not one of the bridge's API tokens (api.tokens)`)
  })

  test('a bridge with api.tokens and the plugin without a token: says how to set one in the plugin\'s terms', async () => {
    const ctx = await withoutTokenEnv({}, () => harness({ token: undefined }))
    const err = await rejectsWith(track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: unique('Token?') }] })),
      'ASKBRIDGE_ERROR', undefined, 5000)
    assert.equal(err.status, 401)
    assert.equal(err.bridgeCode, 'UNAUTHORIZED')
    assert.equal(err.message, `askbridge at ${bridge.url}: the bridge takes API tokens (api.tokens) and the plugin sent none: `
      + 'set config.token, else $ASKBRIDGE_TOKEN or $BRIDGE_TOKEN, to one with the ask scope')
  })

  test('a token from the environment that the bridge refuses: the error names the variable, not the token', async () => {
    const secret = 'stale-token-s3cr3t'
    const ctx = await withoutTokenEnv({ BRIDGE_TOKEN: secret }, () => harness({ token: undefined }))
    const err = await rejectsWith(track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: unique('Stale?') }] })),
      'ASKBRIDGE_ERROR', undefined, 5000)
    assert.equal(err.message, `askbridge at ${bridge.url}: the bearer token is not valid: $BRIDGE_TOKEN is not one of the bridge's API tokens (api.tokens)`)
    assert.ok(!err.message.includes(secret) && !err.stack.includes(secret), 'the token is not shown')
  })

  test('a token the bridge knows without the ask scope (403): the error names where it came from and how to fix it, not the token', async () => {
    const ctx = await withoutTokenEnv({ ASKBRIDGE_TOKEN: ANSWER_TOKEN }, () => harness({ token: undefined }))
    const err = await rejectsWith(track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: unique('Scope?') }] })),
      'ASKBRIDGE_ERROR', undefined, 5000)
    assert.equal(err.status, 403)
    assert.equal(err.bridgeCode, 'FORBIDDEN')
    assert.equal(err.message, `askbridge at ${bridge.url}: this token lacks the ask scope: $ASKBRIDGE_TOKEN is one of the bridge's API tokens (api.tokens) `
      + 'but not one with the ask scope the plugin needs: set $ASKBRIDGE_TOKEN to a token with scopes [ask] there')
    assert.ok(!err.message.includes(ANSWER_TOKEN) && !err.stack.includes(ANSWER_TOKEN), 'the token is not shown')
  })
})

describe('provider API: a url where no bridge answers', () => {
  // What the QA run met: Python's http.server at the url, which answers a
  // POST with a 501 page. Its page is not what the model should read.
  const PAGE = '<!DOCTYPE HTML>\n<html lang="en">\n<head><title>Error response</title></head>\n'
    + "<body><h1>Error response</h1><p>Error code: 501</p><p>Message: Unsupported method ('POST').</p></body>\n</html>\n"
  for (const [status, reason] of [[501, 'Not Implemented'], [404, 'Not Found'], [405, 'Method Not Allowed']]) {
    test(`a web server answering HTTP ${status} with its own page: "wrong bridge URL", without the page`, async () => {
      const requests = []
      const web = createServer((req, res) => {
        requests.push(`${req.method} ${req.url}`)
        req.resume()
        res.writeHead(status, { 'content-type': 'text/html;charset=utf-8' }).end(PAGE)
      })
      await new Promise((resolve) => web.listen(0, '127.0.0.1', resolve))
      try {
        const url = `http://127.0.0.1:${web.address().port}`
        const ctx = await harness({ url, retryFor: 600 })
        const err = await rejectsWith(track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: unique('Web?') }] })),
          'ASKBRIDGE_ERROR', undefined, 5000)
        assert.equal(err.status, status)
        assert.equal(err.bridgeCode, undefined)
        assert.equal(err.message, `askbridge at ${url}: wrong bridge URL: what answers there has no bridge API (HTTP ${status} ${reason}); `
          + "the plugin's url (config.url, else $ASKBRIDGE_URL or $BRIDGE_SERVER) says where the bridge is")
        assert.deepStrictEqual(requests, ['POST /v1/questions'], 'not retried: asking again changes nothing')
      } finally {
        web.close()
      }
    })
  }
})

describe('provider API: a wait longer than the bridge holds a call', () => {
  test('re-polls past store.max_wait until the person answers', async () => {
    const file = await writeConfig(build.dir)
    await writeFile(file, (await readFile(file, 'utf8')).replace('max_wait: 30s', 'max_wait: 1s'))
    const short = await startBridge(build.bin, file)
    try {
      const ctx = await harness({ url: short.url, pollWait: 5 })
      const text = unique('Still waiting?')
      const asking = track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: text, options: [{ label: 'Yes' }, { label: 'No' }] }] }))
      const someone = new Person(short.url)
      const rec = await someone.question(text)
      // Answered only once the bridge has ended three of the plugin's long-polls still pending.
      const deadline = Date.now() + 15_000
      for (;;) {
        const metrics = await (await fetch(`${short.url}/metrics`)).text()
        const polls = Number(/^askbridge_http_request_duration_seconds_count\{code="200",route="GET \/v1\/questions\/\{id\}"\} (\d+)$/m.exec(metrics)?.[1] ?? 0)
        if (polls >= 3) break
        if (Date.now() > deadline) throw new Error(`the plugin polled ${polls} times in 15 s`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      await someone.answer(rec.id, [{ id: 'q', selected: ['No'] }])
      assert.deepStrictEqual(await within(asking, 10_000, 'ask'), { answers: [{ id: 'q', selected: ['No'] }] })
    } finally {
      await short.stop()
    }
  })
})

describe('provider API: bridge down', () => {
  test('nothing listening: ASKBRIDGE_UNREACHABLE at once, naming the URL', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`
    const ctx = await harness({ url })
    const start = Date.now()
    const err = await rejectsWith(track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: 'Hello?' }] })),
      'ASKBRIDGE_UNREACHABLE', undefined, 5000)
    assert.ok(Date.now() - start < 3000, `took ${Date.now() - start} ms`)
    assert.match(err.message, new RegExp(`^askbridge at ${url} can't be reached: .*ECONNREFUSED`))
    // and says what to check, as the bridge CLI does
    assert.ok(err.message.endsWith("; is `bridge serve` running there? The plugin's url (config.url, else $ASKBRIDGE_URL or $BRIDGE_SERVER) says where it is"), err.message)
  })

  test('something that closes the connection without an HTTP response (Redis at the url): ASKBRIDGE_UNREACHABLE at once, not after retryFor', async () => {
    // As Redis does with an HTTP request: it reads it and closes the
    // connection without a word, which is also what a bridge that stops
    // mid-call does; the GET /healthz that follows is closed too.
    const requests = []
    const db = createTCPServer((sock) => sock.once('data', (data) => {
      requests.push(String(data).split('\r\n')[0])
      sock.destroy()
    }))
    await new Promise((resolve) => db.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${db.address().port}`
      const ctx = await harness({ url, retryFor: 600 })
      const err = await rejectsWith(track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: 'Hello?' }] })),
        'ASKBRIDGE_UNREACHABLE', undefined, 10_000)
      assert.equal(err.message, `askbridge at ${url} can't be reached: what is there closed the connection without an HTTP response, `
        + 'and so it did to a GET /healthz sent to check: no bridge, nor a proxy in front of one (a database, say); '
        + "is `bridge serve` running there? The plugin's url (config.url, else $ASKBRIDGE_URL or $BRIDGE_SERVER) says where it is")
      assert.deepStrictEqual(requests, ['POST /v1/questions HTTP/1.1', 'GET /healthz HTTP/1.1'])
    } finally {
      db.close()
    }
  })

  test('a bridge that stops during the first create (restarting) is retried: its GET /healthz finds nothing listening', async () => {
    const stopping = createTCPServer((sock) => {
      stopping.close() // no more connections
      sock.once('data', () => sock.destroy())
    })
    await new Promise((resolve) => stopping.listen(0, '127.0.0.1', resolve))
    const { port } = stopping.address()
    let onRefused
    const refused = new Promise((resolve) => {
      onRefused = ({ connectParams }) => { if (String(connectParams.port) === String(port)) resolve() }
      subscribe('undici:client:connectError', onRefused)
    })
    // Back on the same port: a relay to the bridge.
    const socks = new Set()
    const back = createTCPServer((sock) => {
      const up = connect(Number(new URL(bridge.url).port), '127.0.0.1')
      for (const s of [sock, up]) {
        socks.add(s)
        s.on('error', () => {})
      }
      sock.pipe(up).pipe(sock)
    })
    try {
      const ctx = await harness({ url: `http://127.0.0.1:${port}` })
      const text = unique('Back yet?')
      const asking = track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: text, options: [{ label: 'Yes' }, { label: 'No' }] }] }))
      await within(refused, 10_000, 'a refused connection')
      await new Promise((resolve) => back.listen(port, '127.0.0.1', resolve))
      const rec = await person.question(text)
      await person.answer(rec.id, [{ id: 'q', selected: ['Yes'] }])
      assert.deepStrictEqual(await within(asking, 10_000, 'ask'), { answers: [{ id: 'q', selected: ['Yes'] }] })
    } finally {
      unsubscribe('undici:client:connectError', onRefused)
      back.close()
      for (const s of socks) s.destroy()
    }
  })

  test('a URL that redirects (a proxy sending http to https): an error naming the url to set, not a 401 for a dropped token', async () => {
    // Redirected, fetch would turn the POST into a GET and, the target
    // being another origin, drop the token: the bridge would say 401.
    const target = bridge.url.replace('127.0.0.1', 'localhost')
    const proxy = createServer((req, res) => res.writeHead(301, { location: target + req.url }).end())
    await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${proxy.address().port}`
      const ctx = await harness({ url })
      const err = await rejectsWith(track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: unique('Moved?') }] })),
        'ASKBRIDGE_ERROR', undefined, 5000)
      assert.equal(err.status, 301)
      assert.equal(err.message, `askbridge at ${url}: HTTP 301 redirects POST /v1/questions to ${target}/v1/questions: set url to ${target}`)
    } finally {
      proxy.close()
    }
  })

  test('a bridge that answers 503 until retryFor has passed: ASKBRIDGE_UNREACHABLE that does not ask whether it runs', async () => {
    const unavailable = createServer((req, res) => {
      req.resume()
      res.writeHead(503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { code: 'UNAVAILABLE', message: "the bridge can't reach its Redis; try again shortly" } }))
    })
    await new Promise((resolve) => unavailable.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${unavailable.address().port}`
      const ctx = await harness({ url, retryFor: 1 })
      const err = await rejectsWith(track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: unique('Redis?') }] })),
        'ASKBRIDGE_UNREACHABLE', undefined, 10_000)
      assert.match(err.message, /can't reach its Redis/)
      assert.doesNotMatch(err.message, /bridge serve/)
    } finally {
      unavailable.close()
    }
  })

  test('the bridge dies mid-wait: ASKBRIDGE_UNREACHABLE once retryFor has passed', async () => {
    const doomed = await startBridge(build.bin, config)
    try {
      const ctx = await harness({ url: doomed.url, retryFor: 1, pollWait: 2 })
      const text = unique('Still there?')
      const asking = track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: text }] }))
      await new Person(doomed.url).question(text)
      await doomed.stop()
      const err = await rejectsWith(asking, 'ASKBRIDGE_UNREACHABLE', undefined, 10_000)
      assert.match(err.message, new RegExp(`^askbridge at ${doomed.url} can't be reached: .*still failing after .*; is \`bridge serve\` running there\\?`))
    } finally {
      await doomed.stop()
    }
  })
})
