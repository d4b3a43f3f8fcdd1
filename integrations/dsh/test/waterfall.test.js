// Newer harnesses: questions through the 'user-questions/request' waterfall
// (emitted as the newer dsh-user-questions source does, see newer-harness.js)
// and approvals through the REAL dsh-user-approval@0.1.0-rc.8 ApprovalService,
// on a real cordis Context, answered through a real bridge process.

import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { after, before, describe, test } from 'node:test'
import { Context } from '@deepseek-ai/cordis'
import { ApprovalService } from '@deepseek-ai/dsh-user-approval'
import { UserQuestionError } from '@deepseek-ai/dsh-user-questions'
import askbridge, { Answerer, AskbridgeError, SEAM_MESSAGES, resolveConfig } from '../lib/index.js'
import { NetworkError } from '../lib/client.js'
import { ANSWER_TOKEN, ASK_TOKEN, Person, buildBridge, cleanup, startBridge, unique, within, writeConfig } from './bridge.js'
import { WaterfallUserQuestionService, fakeAgent } from './newer-harness.js'

let build, bridge, person

/** Mark a promise handled now; the test awaits it later. */
function track (promise) {
  promise.catch(() => {})
  return promise
}

const contexts = new Set()

/**
 * A root Context of a newer harness: the waterfall userQuestions service,
 * the real approval service, a downstream answerer registered first (the
 * host's own UI), then askbridge, which prepends itself ahead of it.
 */
async function harness (options = {}) {
  const ctx = new Context()
  contexts.add(ctx)
  await ctx.plugin(WaterfallUserQuestionService)
  await ctx.plugin(ApprovalService)
  const downstream = { questions: [], approvals: [], question: null, approval: null }
  ctx.on('user-questions/request', (request, next) => {
    downstream.questions.push(request)
    return downstream.question ? downstream.question(request) : next()
  })
  ctx.on('approval/request', (req, next) => {
    downstream.approvals.push(req)
    return downstream.approval ? downstream.approval(req) : next()
  })
  await ctx.plugin(askbridge, { url: bridge.url, token: ASK_TOKEN, pollWait: 5, ...options })
  return { ctx, downstream }
}

/**
 * An Answerer of its own, as a restarted harness has; waiting(id) settles
 * once it waits on the request id (its debug line says so).
 */
function watched (options = {}) {
  const seen = new Map()
  const at = (id) => {
    if (!seen.has(id)) {
      let resolve
      seen.set(id, { promise: new Promise((r) => { resolve = r }), resolve: () => resolve() })
    }
    return seen.get(id)
  }
  const log = {
    debug (format, kind, id) { if (/ pending /.test(format)) at(id).resolve() },
    warn () {},
  }
  const answerer = new Answerer(resolveConfig({ url: bridge.url, token: ASK_TOKEN, pollWait: 5, ...options }), log)
  return { answerer, waiting: (id) => at(id).promise }
}

async function dispose (ctx) {
  contexts.delete(ctx)
  await ctx.fiber.dispose()
}

/**
 * Settle once every withdrawal the answerer has going has ended, retries
 * it starts on the way included; fail after `ms`.
 */
function withdrawalsEnded (answerer, ms, what) {
  const all = async () => {
    while (answerer.withdrawals.size > 0) await Promise.allSettled([...answerer.withdrawals])
  }
  return within(all(), ms, what)
}

async function rejection (promise, ms = 15_000) {
  return within(promise.then(
    (v) => { throw new Error(`expected a rejection, got ${JSON.stringify(v)}`) },
    (e) => e,
  ), ms, 'the rejection')
}

/** Poll the bridge until the record satisfies `ok`; fail after `ms`. */
async function eventually (kind, id, ok, ms = 5000) {
  const deadline = Date.now() + ms
  for (;;) {
    const rec = await person.get(kind, id)
    if (ok(rec)) return rec
    if (Date.now() > deadline) throw new Error(`${kind} ${id} never got there: ${JSON.stringify(rec)}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

before(async () => {
  build = await buildBridge()
  bridge = await startBridge(build.bin, await writeConfig(build.dir))
  person = new Person(bridge.url)
})

after(async () => {
  for (const ctx of contexts) await ctx.fiber.dispose()
  await bridge?.stop()
  await cleanup(build?.dir)
})

/**
 * A proxy in front of the bridge, listening on a free port: each call is
 * handed to route(req, url, forward, res), which answers it through res or
 * sends it on with forward(), which answers with the bridge's answer and
 * returns it as {status, body}.
 */
async function proxyBridge (route) {
  const proxy = createServer(async (req, res) => {
    const chunks = []
    for await (const c of req) chunks.push(c)
    const forward = async () => {
      const r = await fetch(bridge.url + req.url, {
        method: req.method,
        headers: { 'content-type': 'application/json', authorization: req.headers.authorization ?? '' },
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      })
      const text = await r.text()
      res.writeHead(r.status, { 'content-type': 'application/json' }).end(text)
      return { status: r.status, body: JSON.parse(text) }
    }
    await route(req, new URL(req.url, bridge.url), forward, res)
  })
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  return proxy
}

describe('user-questions/request waterfall (newer harness)', () => {
  let h
  before(async () => { h = await harness() })

  test('answers first (prepend), with tool_call_id from wait.callId and the agent as caller', async () => {
    const agent = fakeAgent('session-wf-1')
    const text = unique('Which region?')
    const callId = `call_${Math.random().toString(36).slice(2)}`
    const asking = track(h.ctx.userQuestions.ask({
      agent,
      wait: { callId, timed: false },
      questions: [{ id: 'region', question: text, options: [{ label: 'eu-west-1' }, { label: 'us-east-1' }] }],
    }))
    const rec = await person.question(text)
    assert.equal(rec.tool_call_id, callId)
    assert.deepEqual(rec.caller, { agent: 'session-wf-1', name: 'dsh', session: 'session-wf-1' })
    await person.answer(rec.id, [{ id: 'region', selected: ['eu-west-1'] }])
    assert.deepStrictEqual(await within(asking, 10_000, 'ask'), { answers: [{ id: 'region', selected: ['eu-west-1'] }] })
    assert.equal(h.downstream.questions.length, 0, 'the host answerer after askbridge never saw it')
  })

  test('tool_call_id from a plan-review intent.callId; request.callId wins when both are there', async () => {
    const text = unique('Approve the migration plan?')
    const question = {
      id: 'plan',
      question: text,
      detail: '1. copy\n2. verify\n3. swap',
      options: [{ label: 'Approve' }, { label: 'Keep planning' }],
      intent: { kind: 'plan-review', approve: 'Approve', callId: 'call_exit_plan_1' },
    }
    const asking = track(h.ctx.userQuestions.ask({ questions: [question] }))
    const rec = await person.question(text)
    assert.equal(rec.tool_call_id, 'call_exit_plan_1')
    assert.deepEqual(rec.questions[0].intent, { kind: 'plan-review', approve: 'Approve' })
    await person.answer(rec.id, [{ id: 'plan', selected: ['Approve'] }])
    assert.deepStrictEqual(await within(asking, 10_000, 'ask'), { answers: [{ id: 'plan', selected: ['Approve'] }] })

    const text2 = unique('And this one?')
    const asking2 = track(h.ctx.userQuestions.ask({
      callId: 'call_durable_7',
      questions: [{ ...question, question: text2, intent: { ...question.intent, callId: 'call_other' } }],
    }))
    const rec2 = await person.question(text2)
    assert.equal(rec2.tool_call_id, 'call_durable_7')
    await person.answer(rec2.id, [{ id: 'plan', selected: ['Keep planning'] }])
    assert.deepStrictEqual(await within(asking2, 10_000, 'ask'), { answers: [{ id: 'plan', selected: ['Keep planning'] }] })
  })

  test('a restarted agent re-attaches to its pending question by call id, and reads an answer it missed', async () => {
    const agent = fakeAgent('session-restart')
    const callId = `call_${Math.random().toString(36).slice(2)}`
    const text = unique('Merge the PR?')
    const request = () => ({
      agent,
      wait: { callId },
      questions: [{ id: 'merge', question: text, options: [{ label: 'Merge' }, { label: 'Wait' }] }],
    })

    // The first process asks, then goes away while the question is pending.
    const first = await harness()
    const lost = track(first.ctx.userQuestions.ask(request()))
    const rec = await person.question(text)
    await dispose(first.ctx)
    const err = await rejection(lost, 5000)
    assert.equal(err.code, 'ASK_ABORTED')
    assert.equal((await person.get('question', rec.id)).status, 'pending', 'unloading does not withdraw the question')

    // The restarted process asks the same call again: the same bridge
    // request (answering the first one answers it), nothing created anew.
    const created = await person.created('question')
    const second = await harness()
    const again = track(second.ctx.userQuestions.ask(request()))
    await person.answer(rec.id, [{ id: 'merge', selected: ['Merge'] }])
    assert.deepStrictEqual(await within(again, 10_000, 'ask'), { answers: [{ id: 'merge', selected: ['Merge'] }] })
    assert.equal(await person.created('question'), created, 'asked once, not twice')

    // And once more after the answer: it comes straight back.
    const third = await harness()
    assert.deepStrictEqual(await within(track(third.ctx.userQuestions.ask(request())), 5000, 'ask'),
      { answers: [{ id: 'merge', selected: ['Merge'] }] })
    assert.equal(await person.created('question'), created)
  })

  test('a second ask in the same call re-attaches too, after a restart under a new agent id', async () => {
    const callId = `call_${Math.random().toString(36).slice(2)}`
    const first = unique('Which branch?')
    const second = unique('And which reviewer?')
    const agentAs = (id) => ({ ...fakeAgent('session-2nd'), id })
    const request = (agent, text) => ({ agent, wait: { callId }, questions: [{ id: 'q', question: text }] })

    // The first process asks twice in one tool call and is answered once.
    const before = await harness()
    const one = track(before.ctx.userQuestions.ask(request(agentAs('agent-before'), first)))
    await person.answer((await person.question(first)).id, [{ id: 'q', selected: [], custom: 'main' }])
    assert.deepStrictEqual(await within(one, 10_000, 'ask'), { answers: [{ id: 'q', selected: [], custom: 'main' }] })
    const lost = track(before.ctx.userQuestions.ask(request(agentAs('agent-before'), second)))
    const rec = await person.question(second)
    await dispose(before.ctx)
    assert.equal((await rejection(lost, 5000)).code, 'ASK_ABORTED')

    // Restarted, the agent has a new id; the caller is not what tells one
    // request from another, so both asks find the requests already made.
    const created = await person.created('question')
    const after = await harness()
    assert.deepStrictEqual(await within(track(after.ctx.userQuestions.ask(request(agentAs('agent-after'), first))), 5000, 'ask'),
      { answers: [{ id: 'q', selected: [], custom: 'main' }] })
    const again = track(after.ctx.userQuestions.ask(request(agentAs('agent-after'), second)))
    await person.answer(rec.id, [{ id: 'q', selected: [], custom: 'ada' }])
    assert.deepStrictEqual(await within(again, 10_000, 'ask'), { answers: [{ id: 'q', selected: [], custom: 'ada' }] })
    assert.equal(await person.created('question'), created, 'the second question was asked once, not twice')
  })

  test('the turn aborted mid-wait: DELETE on the bridge, ASK_ABORTED', async () => {
    const text = unique('Drop the table?')
    const turn = new AbortController()
    const asking = track(h.ctx.userQuestions.ask({
      agent: fakeAgent('session-abort'),
      wait: { callId: `call_${Math.random().toString(36).slice(2)}` },
      questions: [{ id: 'drop', question: text, options: [{ label: 'Drop' }, { label: 'Keep' }] }],
      signal: turn.signal,
    }))
    const rec = await person.question(text)
    turn.abort()
    const err = await rejection(asking, 5000)
    assert.ok(err instanceof UserQuestionError)
    assert.equal(err.code, 'ASK_ABORTED')
    assert.equal(err.message, SEAM_MESSAGES.ASK_ABORTED)
    assert.equal((await eventually('question', rec.id, (r) => r.status !== 'pending')).status, 'cancelled')
    assert.equal(h.downstream.questions.length, 0, 'an abort is not a decline')
  })

  test('the turn aborted while its create is on the way: withdrawn by tool_call_id, never asked', async () => {
    // A proxy holds the create on its way to the bridge, as a slow network
    // would, and forwards everything else at once.
    const held = []
    let heldOne, withdrawn
    const arrived = new Promise((resolve) => { heldOne = resolve })
    const withdrawal = new Promise((resolve) => { withdrawn = resolve })
    const proxy = await proxyBridge(async (req, url, forward) => {
      if (req.method === 'POST') {
        held.push(forward)
        heldOne()
      } else {
        const r = await forward()
        if (req.method === 'DELETE') withdrawn(r)
      }
    })
    try {
      const h = await harness({ url: `http://127.0.0.1:${proxy.address().port}` })
      const before = await person.created('question')
      const turn = new AbortController()
      const asking = track(h.ctx.userQuestions.ask({
        agent: fakeAgent('session-abort-create'),
        wait: { callId: `call_${Math.random().toString(36).slice(2)}` },
        questions: [{ id: 'drop', question: unique('Drop the table?'), options: [{ label: 'Drop' }, { label: 'Keep' }] }],
        signal: turn.signal,
      }))
      await within(arrived, 5000, 'the create at the proxy')
      turn.abort()
      const err = await rejection(asking, 5000)
      assert.equal(err.code, 'ASK_ABORTED')
      // The create lands after the withdrawal: it finds the request cancelled.
      await within(withdrawal, 5000, 'the withdrawal at the bridge')
      const landed = await held[0]()
      assert.equal(landed.status, 200)
      assert.equal(landed.body.status, 'cancelled')
      assert.equal(await person.created('question'), before, 'the late create asked nobody')
    } finally {
      proxy.closeAllConnections()
      proxy.close()
    }
  })

  test('the turn aborted while its create is on the way, on a bridge without withdrawal by tool_call_id: created again and cancelled', async () => {
    // A bridge from before 2026-12-03 answers DELETE ?tool_call_id= with
    // NOT_FOUND for a request that does not exist yet. The proxy plays it:
    // it holds the first create, refuses that DELETE as such a bridge
    // would, and forwards everything else.
    const seen = []
    let held
    let createdAgain
    let heldOne, withdrawn
    const arrived = new Promise((resolve) => { heldOne = resolve })
    const withdrawal = new Promise((resolve) => { withdrawn = resolve })
    const proxy = await proxyBridge(async (req, url, forward, res) => {
      seen.push(`${req.method} ${url.pathname}${url.searchParams.has('tool_call_id') ? '?tool_call_id' : ''}`)
      if (req.method === 'POST' && held === undefined) {
        held = forward
        heldOne()
      } else if (req.method === 'DELETE' && url.searchParams.has('tool_call_id')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"NOT_FOUND","message":"no such request"}}')
      } else {
        const r = await forward()
        if (req.method === 'POST') createdAgain = r.body.id
        if (req.method === 'DELETE') withdrawn(r)
      }
    })
    try {
      const h = await harness({ url: `http://127.0.0.1:${proxy.address().port}` })
      const turn = new AbortController()
      const text = unique('Truncate the table?')
      const asking = track(h.ctx.userQuestions.ask({
        agent: fakeAgent('session-abort-old-bridge'),
        wait: { callId: `call_${Math.random().toString(36).slice(2)}` },
        questions: [{ id: 'drop', question: text, options: [{ label: 'Truncate' }, { label: 'Keep' }] }],
        signal: turn.signal,
      }))
      await within(arrived, 5000, 'the create at the proxy')
      turn.abort()
      const err = await rejection(asking, 5000)
      assert.equal(err.code, 'ASK_ABORTED')
      await within(withdrawal, 5000, 'the withdrawal at the bridge')
      assert.deepEqual(seen, ['POST /v1/questions', 'DELETE /v1/questions?tool_call_id', 'POST /v1/questions', `DELETE /v1/questions/${createdAgain}`])
      assert.equal((await person.get('question', createdAgain)).status, 'cancelled')
      // The first create lands last: it finds the same request, cancelled.
      const landed = await held()
      assert.equal(landed.status, 200)
      assert.equal(landed.body.status, 'cancelled')
    } finally {
      proxy.closeAllConnections()
      proxy.close()
    }
  })

  test('a call id numbered by position (call-0) keys nothing: a later turn asks anew', async () => {
    const text = unique('Ship it?')
    const request = () => ({ agent: fakeAgent('session-pos-q'), callId: 'call-0', questions: [{ id: 'ship', question: text, options: [{ label: 'Ship' }, { label: 'Hold' }] }] })
    const first = track(h.ctx.userQuestions.ask(request()))
    const rec = await person.question(text)
    assert.match(rec.tool_call_id, /^askbridge-dsh-/)
    await person.answer(rec.id, [{ id: 'ship', selected: ['Ship'] }])
    assert.deepStrictEqual(await within(first, 10_000, 'ask'), { answers: [{ id: 'ship', selected: ['Ship'] }] })

    const second = track(h.ctx.userQuestions.ask(request()))
    const rec2 = await person.question(text)
    assert.notEqual(rec2.id, rec.id)
    await person.answer(rec2.id, [{ id: 'ship', selected: ['Hold'] }])
    assert.deepStrictEqual(await within(second, 10_000, 'ask'), { answers: [{ id: 'ship', selected: ['Hold'] }] })
  })

  test('a plan-review with no plan goes as the plain question, not refused', async () => {
    const text = unique('Go ahead?')
    const asking = track(h.ctx.userQuestions.ask({
      agent: fakeAgent('session-empty-plan'),
      questions: [{ id: 'plan', question: text, detail: '  ', options: [{ label: 'Approve' }, { label: 'Revise' }], intent: { kind: 'plan-review', approve: 'Approve' } }],
    }))
    const rec = await person.question(text)
    assert.equal(rec.questions[0].intent, undefined)
    await person.answer(rec.id, [{ id: 'plan', selected: ['Approve'] }])
    assert.deepStrictEqual(await within(asking, 10_000, 'ask'), { answers: [{ id: 'plan', selected: ['Approve'] }] })
  })

  test('dismissed: ASK_CANCELLED, not handed on', async () => {
    const text = unique('Page the on-call?')
    const asking = track(h.ctx.userQuestions.ask({ questions: [{ id: 'page', question: text }] }))
    await person.dismiss('question', (await person.question(text)).id)
    const err = await rejection(asking)
    assert.ok(err instanceof UserQuestionError)
    assert.equal(err.code, 'ASK_CANCELLED')
    assert.equal(err.message, 'the user cancelled ask_user_question')
    assert.equal(h.downstream.questions.length, 0)
  })
})

describe('NO_PROVIDER falls through to next()', () => {
  test('questions: the next answerer answers; with none, the seam NO_PROVIDER', async () => {
    const { ctx, downstream } = await harness({ route: 'nowhere' })
    downstream.question = (request) => Promise.resolve({ answers: [{ id: request.questions[0].id, selected: ['local'] }] })
    const answer = await within(track(ctx.userQuestions.ask({
      questions: [{ id: 'q', question: unique('Anyone?'), options: [{ label: 'local' }] }],
    })), 5000, 'ask')
    assert.deepStrictEqual(answer, { answers: [{ id: 'q', selected: ['local'] }] })
    assert.equal(downstream.questions.length, 1)

    downstream.question = null // the host's answerer declines too: the waterfall's end
    const err = await rejection(track(ctx.userQuestions.ask({ questions: [{ id: 'q', question: unique('Anyone at all?') }] })), 5000)
    assert.ok(err instanceof UserQuestionError)
    assert.equal(err.code, 'NO_PROVIDER')
    assert.equal(err.message, 'no user-questions answerer accepted the request')
  })

  test('a wait told NO_PROVIDER (a retried create re-attached to a request no target took) falls through too', async () => {
    const proxy = await proxyBridge(async (req, url, forward, res) => {
      if (req.method === 'GET' && url.searchParams.has('wait')) {
        res.writeHead(503, { 'content-type': 'application/json' })
          .end('{"error":{"code":"NO_PROVIDER","message":"no user-questions answerer accepted the request: no target of route \\"default\\" took the request (slack: not_in_channel)"}}')
      } else {
        await forward()
      }
    })
    try {
      const { ctx, downstream } = await harness({ url: `http://127.0.0.1:${proxy.address().port}` })
      downstream.question = (request) => Promise.resolve({ answers: [{ id: request.questions[0].id, selected: ['local'] }] })
      const answer = await within(track(ctx.userQuestions.ask({
        questions: [{ id: 'q', question: unique('Anyone?'), options: [{ label: 'local' }] }],
      })), 5000, 'ask')
      assert.deepStrictEqual(answer, { answers: [{ id: 'q', selected: ['local'] }] })
      assert.equal(downstream.questions.length, 1)
    } finally {
      proxy.close()
    }
  })

  test('approvals: the next answerer decides; with none, the service fails closed (unavailable)', async () => {
    const { ctx, downstream } = await harness({ route: 'nowhere' })
    const agent = fakeAgent('session-np')
    downstream.approval = () => Promise.resolve('rejected')
    assert.equal(await within(track(ctx.approval.request({ agent, toolName: 'rm_rf' })), 5000, 'approval'), 'rejected')
    downstream.approval = null
    assert.equal(await within(track(ctx.approval.request({ agent, toolName: 'rm_rf' })), 5000, 'approval'), 'unavailable')
    assert.equal(downstream.approvals.length, 2)
  })
})

describe('approval/request (real dsh-user-approval 0.1.0-rc.8)', () => {
  let h
  before(async () => { h = await harness() })

  const tool = () => `kubectl_apply_${Math.random().toString(36).slice(2, 8)}`

  test('allowed-once, with the call id as tool_call_id', async () => {
    const agent = fakeAgent('session-appr')
    const toolName = tool()
    const deciding = track(h.ctx.approval.request({ agent, toolName, callId: 'call_appr_1', reason: 'writes to the prod cluster' }))
    const rec = await person.approval(toolName)
    assert.equal(rec.tool_call_id, 'call_appr_1')
    assert.equal(rec.call_id, 'call_appr_1')
    assert.equal(rec.reason, 'writes to the prod cluster')
    assert.deepEqual(rec.caller, { agent: 'session-appr', name: 'dsh', session: 'session-appr' })
    await person.decide(rec.id, { outcome: 'allowed-once' })
    assert.equal(await within(deciding, 10_000, 'approval'), 'allowed-once')
    assert.deepEqual(agent.session.events.map((e) => e.type), ['turn/start', 'approval/asked', 'approval/decided'])
    assert.equal(agent.session.events[2].data.outcome, 'allowed-once')
    assert.equal(h.downstream.approvals.length, 0)
  })

  test('a call id over the bridge limit: still decided, re-attachable by its hash', async () => {
    const agent = fakeAgent('session-appr-long')
    const toolName = tool()
    const callId = `call_${'x'.repeat(250)}`
    const deciding = track(h.ctx.approval.request({ agent, toolName, callId }))
    const rec = await person.approval(toolName)
    assert.match(rec.tool_call_id, /^sha256:[0-9a-f]{64}$/)
    // A restarted harness asking while it is pending finds the same approval.
    const created = await person.created('approval')
    const restarted = watched()
    const again = track(restarted.answerer.approve({ agent, toolName, callId }, () => Promise.resolve('next')))
    await within(restarted.waiting(rec.id), 5000, 'the restarted ask at the same approval')
    await person.decide(rec.id, { outcome: 'allowed-once' })
    assert.equal(await within(deciding, 10_000, 'approval'), 'allowed-once')
    assert.equal(await within(again, 10_000, 'approval'), 'allowed-once')
    assert.equal(await person.created('approval'), created, 'asked once')
  })

  test('a decision is not handed to a later ask of the same call: a grant is for one ask', async () => {
    // dsh-user-approval logs every ask as an approval of its own; a harness
    // that re-runs the call (after a restart) asks anew, and so must the person.
    const agent = fakeAgent('session-appr-again')
    const toolName = tool()
    const callId = `call_${Math.random().toString(36).slice(2)}`
    const first = track(h.ctx.approval.request({ agent, toolName, callId }))
    const rec = await person.approval(toolName)
    await person.decide(rec.id, { outcome: 'allowed-once' })
    assert.equal(await within(first, 10_000, 'approval'), 'allowed-once')

    const second = track(h.ctx.approval.request({ agent, toolName, callId }))
    const rec2 = await person.approval(toolName)
    assert.notEqual(rec2.id, rec.id)
    assert.notEqual(rec2.tool_call_id, rec.tool_call_id)
    assert.equal(rec2.call_id, callId)
    // Restarted while that one is pending, the harness finds it, not a third.
    const created = await person.created('approval')
    const restarted = watched()
    const third = track(restarted.answerer.approve({ agent, toolName, callId }, () => Promise.resolve('next')))
    await within(restarted.waiting(rec2.id), 5000, 'the restarted ask at the pending approval')
    await person.decide(rec2.id, { outcome: 'rejected' })
    assert.equal(await within(second, 10_000, 'approval'), 'rejected')
    assert.equal(await within(third, 10_000, 'approval'), 'rejected')
    assert.equal(await person.created('approval'), created, 'the restarted ask found the pending approval')
  })

  test('a call id numbered by position (call-0) keys nothing: another session asks anew', async () => {
    // dsh-llm names a call whose provider streamed no id call-0, call-1, ...
    // in every response: another session's call-0 is another call.
    const toolName = tool()
    const first = track(h.ctx.approval.request({ agent: fakeAgent('session-pos-1'), toolName, callId: 'call-0', reason: 'restarts the API' }))
    const rec = await person.approval(toolName)
    assert.match(rec.tool_call_id, /^askbridge-dsh-/)
    assert.equal(rec.call_id, 'call-0', 'the person still sees the call id')
    await person.decide(rec.id, { outcome: 'allowed-once' })
    assert.equal(await within(first, 10_000, 'approval'), 'allowed-once')

    const second = track(h.ctx.approval.request({ agent: fakeAgent('session-pos-2'), toolName, callId: 'call-0', reason: 'restarts the API' }))
    const rec2 = await person.approval(toolName)
    assert.notEqual(rec2.id, rec.id)
    await person.decide(rec2.id, { outcome: 'rejected' })
    assert.equal(await within(second, 10_000, 'approval'), 'rejected')
  })

  test('rejected, and a dismissal counts as a rejection', async () => {
    const agent = fakeAgent('session-appr-2')
    const toolName = tool()
    const deciding = track(h.ctx.approval.request({ agent, toolName, reason: 'deletes a namespace' }))
    await person.decide((await person.approval(toolName)).id, { outcome: 'rejected', note: 'not today' })
    assert.equal(await within(deciding, 10_000, 'approval'), 'rejected')

    const toolName2 = tool()
    const deciding2 = track(h.ctx.approval.request({ agent, toolName: toolName2 }))
    await person.dismiss('approval', (await person.approval(toolName2)).id)
    assert.equal(await within(deciding2, 10_000, 'approval'), 'rejected')
  })

  test('the turn aborted: the service says cancelled and the bridge approval is withdrawn', async () => {
    const toolName = tool()
    const turn = new AbortController()
    const deciding = track(h.ctx.approval.request({ agent: fakeAgent('session-appr-3'), toolName, signal: turn.signal }))
    const rec = await person.approval(toolName)
    turn.abort()
    assert.equal(await within(deciding, 5000, 'approval'), 'cancelled')
    const ended = await eventually('approval', rec.id, (r) => r.status !== 'pending')
    assert.equal(ended.status, 'cancelled')
    assert.equal(ended.error.code, 'ASK_ABORTED')
  })

  test('expired: the listener throws ASK_TIMED_OUT, which the service fails closed', async () => {
    const options = { url: bridge.url, token: ASK_TOKEN, expiresIn: 1 }
    const toolName = tool()
    const direct = track(new Answerer(resolveConfig(options)).approve({ agent: fakeAgent('s'), toolName }, () => Promise.resolve('next')))
    await person.approval(toolName)
    const err = await rejection(direct, 10_000)
    assert.ok(err instanceof AskbridgeError)
    assert.equal(err.code, 'ASK_TIMED_OUT')
    assert.equal(err.message, 'the approval request timed out before the user decided')

    const { ctx } = await harness({ ...options, questions: false })

    const toolName2 = tool()
    const deciding = track(ctx.approval.request({ agent: fakeAgent('s2'), toolName: toolName2 }))
    await person.approval(toolName2)
    assert.equal(await within(deciding, 10_000, 'approval'), 'unavailable')
  })

  test('arguments go to the bridge as an object; a list is left out, not refused', async () => {
    const answerer = new Answerer(resolveConfig({ url: bridge.url, token: ASK_TOKEN, pollWait: 5 }))
    for (const [args, want] of [[{ file: 'prod.yaml', replicas: 3 }, { file: 'prod.yaml', replicas: 3 }], [['prod.yaml'], undefined]]) {
      const toolName = tool()
      const deciding = track(answerer.approve({ agent: fakeAgent('session-args'), toolName, arguments: args }, () => Promise.resolve('next')))
      const rec = await person.approval(toolName)
      assert.deepEqual(rec.arguments, want)
      await person.decide(rec.id, { outcome: 'allowed-once' })
      assert.equal(await within(deciding, 10_000, 'approval'), 'allowed-once')
    }
  })

  test('no token for a bridge with api.tokens: the listener throws an error that says how to set one', async () => {
    const options = { ...resolveConfig({ url: bridge.url, token: ASK_TOKEN }), token: '', tokenFrom: undefined }
    const err = await rejection(track(new Answerer(options).approve({ agent: fakeAgent('s'), toolName: tool() }, () => Promise.resolve('next'))), 5000)
    assert.ok(err instanceof AskbridgeError)
    assert.equal(err.code, 'ASKBRIDGE_ERROR')
    assert.equal(err.status, 401)
    assert.equal(err.message, `askbridge at ${bridge.url}: the bridge takes API tokens (api.tokens) and the plugin sent none: `
      + 'set config.token, else $ASKBRIDGE_TOKEN or $BRIDGE_TOKEN, to one with the ask scope')
  })

  test('a token without the ask scope (403): the listener throws an error that names config.token and how to fix it, not the token', async () => {
    const options = resolveConfig({ url: bridge.url, token: ANSWER_TOKEN })
    const err = await rejection(track(new Answerer(options).approve({ agent: fakeAgent('s'), toolName: tool() }, () => Promise.resolve('next'))), 5000)
    assert.ok(err instanceof AskbridgeError)
    assert.equal(err.code, 'ASKBRIDGE_ERROR')
    assert.equal(err.status, 403)
    assert.equal(err.bridgeCode, 'FORBIDDEN')
    assert.equal(err.message, `askbridge at ${bridge.url}: this token lacks the ask scope: config.token is one of the bridge's API tokens (api.tokens) `
      + 'but not one with the ask scope the plugin needs: set config.token to a token with scopes [ask] there')
    assert.ok(!err.message.includes(ANSWER_TOKEN) && !err.stack.includes(ANSWER_TOKEN), 'the token is not shown')
  })

  test('approvals: false leaves approval/request alone', async () => {
    const { ctx, downstream } = await harness({ approvals: false })
    downstream.approval = () => Promise.resolve('allowed-once')
    assert.equal(await within(track(ctx.approval.request({ agent: fakeAgent('s'), toolName: tool() })), 5000, 'approval'), 'allowed-once')
    assert.equal(downstream.approvals.length, 1)
  })
})

/**
 * An Answerer whose calls to the bridge fail as scripted: faults[method] is
 * a list of what each call does in turn, 'lost' (it reaches the bridge, its
 * reply does not come back), 'dropped' (it fails as 'lost' does, but never
 * reached the bridge), 'refused' (it never connects), 'ok', or a function
 * whose promise the call waits for before it goes through; past the list's
 * end, calls go through.
 */
function faulty (options, faults) {
  const answerer = new Answerer(resolveConfig({ url: bridge.url, token: ASK_TOKEN, pollWait: 5, ...options }))
  const real = answerer.client
  const calls = {}
  const lost = [] // the replies that never came back
  answerer.client = new Proxy(real, {
    get (target, prop) {
      const fn = target[prop]
      if (typeof fn !== 'function' || !(prop in faults)) return typeof fn === 'function' ? fn.bind(target) : fn
      return async (...args) => {
        const n = calls[prop] = (calls[prop] ?? 0) + 1
        const fault = faults[prop][n - 1] ?? 'ok'
        if (typeof fault === 'function') await fault()
        if (fault === 'refused') throw new NetworkError('connect ECONNREFUSED', undefined, 'ECONNREFUSED')
        if (fault === 'dropped') throw new NetworkError('socket hang up', undefined, 'ECONNRESET') // sent, never arrived
        const out = await fn.apply(target, args)
        if (fault === 'lost') {
          lost.push(out)
          throw new NetworkError('socket hang up', undefined, 'ECONNRESET')
        }
        return out
      }
    },
  })
  return { answerer, calls, lost }
}

describe('faults between the plugin and the bridge', () => {
  test('a create whose reply was lost, then refused while the bridge restarts: retried, asked once', async () => {
    const text = unique('Rotate the certs?')
    const { answerer, calls } = faulty({}, { create: ['lost', 'refused', 'refused'] })
    const created = await person.created('question')
    const asking = track(answerer.ask({ questions: [{ id: 'q', question: text, options: [{ label: 'Rotate' }, { label: 'Wait' }] }] }))
    const rec = await person.question(text)
    await person.answer(rec.id, [{ id: 'q', selected: ['Rotate'] }])
    assert.deepStrictEqual(await within(asking, 10_000, 'ask'), { answers: [{ id: 'q', selected: ['Rotate'] }] })
    assert.equal(calls.create, 4)
    assert.equal(await person.created('question'), created + 1, 'asked once')
  })

  test('a create given up on after its reply was lost: the request it may have made is withdrawn', async () => {
    const text = unique('Purge the cache?')
    const refused = Array(1000).fill('refused')
    const { answerer, lost } = faulty({ retryFor: 1 }, { create: ['lost', ...refused] })
    const err = await rejection(track(answerer.ask({ questions: [{ id: 'q', question: text }] })), 10_000)
    assert.equal(err.code, 'ASKBRIDGE_UNREACHABLE')
    await within(Promise.all([...answerer.withdrawals]), 10_000, 'the withdrawal')
    assert.equal(lost.length, 1)
    assert.equal((await person.get('question', lost[0].id)).status, 'cancelled', 'the question the lost create made is withdrawn')
  })

  test('a wait given up on withdraws its request, under the call id too: the call failed, and nobody would read its answer', async () => {
    const text = unique('Rebuild the index?')
    const callId = `call_${Math.random().toString(36).slice(2)}`
    const { answerer } = faulty({ retryFor: 1 }, { get: Array(1000).fill('refused') })
    const asking = track(answerer.ask({ callId, questions: [{ id: 'q', question: text }] }))
    const rec = await person.question(text)
    assert.equal((await rejection(asking, 10_000)).code, 'ASKBRIDGE_UNREACHABLE')
    await within(Promise.all([...answerer.withdrawals]), 10_000, 'the withdrawal')
    assert.equal((await person.get('question', rec.id)).status, 'cancelled', 'the question nobody waits for is withdrawn')
  })

  test('a create that never connected fails at once, and withdraws nothing', async () => {
    const { answerer, calls } = faulty({}, { create: ['refused'], cancelByToolCall: [] })
    const err = await rejection(track(answerer.ask({ questions: [{ id: 'q', question: unique('Anyone?') }] })), 5000)
    assert.equal(err.code, 'ASKBRIDGE_UNREACHABLE')
    assert.equal(calls.create, 1)
    assert.equal(answerer.withdrawals.size, 0)
    assert.equal(calls.cancelByToolCall, undefined)
  })

  test('a create given up on that made nothing leaves nothing behind: the call asks again later', async () => {
    // Withdrawn by tool_call_id, it would have left a withdrawal that the
    // call's next ask finds (cancelled) instead of asking.
    const text = unique('Flush the queue?')
    const callId = `call_${Math.random().toString(36).slice(2)}`
    const request = () => ({ callId, questions: [{ id: 'q', question: text, options: [{ label: 'Flush' }, { label: 'Keep' }] }] })
    const { answerer } = faulty({ retryFor: 1 }, { create: ['dropped', ...Array(1000).fill('refused')] })
    assert.equal((await rejection(track(answerer.ask(request())), 10_000)).code, 'ASKBRIDGE_UNREACHABLE')
    await within(Promise.all([...answerer.withdrawals]), 10_000, 'the give-up')
    const again = new Answerer(resolveConfig({ url: bridge.url, token: ASK_TOKEN, pollWait: 5 }))
    const asking = track(again.ask(request()))
    const rec = await person.question(text)
    await person.answer(rec.id, [{ id: 'q', selected: ['Keep'] }])
    assert.deepStrictEqual(await within(asking, 10_000, 'ask'), { answers: [{ id: 'q', selected: ['Keep'] }] })
  })

  test('an approval decided before, found again by a retry after a lost reply: asked anew', async () => {
    const agent = fakeAgent('session-lost-retry')
    const toolName = `drain_${Math.random().toString(36).slice(2, 8)}`
    const callId = `call_${Math.random().toString(36).slice(2)}`
    const first = track(new Answerer(resolveConfig({ url: bridge.url, token: ASK_TOKEN, pollWait: 5 })).approve({ agent, toolName, callId }, () => Promise.resolve('next')))
    const rec = await person.approval(toolName)
    await person.decide(rec.id, { outcome: 'allowed-once' })
    assert.equal(await within(first, 10_000, 'approval'), 'allowed-once')

    // The second ask's create reaches the bridge but its reply is lost; the
    // retry finds the decided approval. Decided a moment ago, by the clocks
    // it could be this ask's own: it is not.
    const { answerer } = faulty({}, { create: ['lost'] })
    const second = track(answerer.approve({ agent, toolName, callId }, () => Promise.resolve('next')))
    const rec2 = await person.approval(toolName)
    assert.notEqual(rec2.id, rec.id)
    await person.decide(rec2.id, { outcome: 'rejected' })
    assert.equal(await within(second, 10_000, 'approval'), 'rejected')
  })

  test('an approval this ask made, decided before a retry after its lost reply: the decision is taken', async () => {
    const agent = fakeAgent('session-lost-own')
    const toolName = `cordon_${Math.random().toString(36).slice(2, 8)}`
    const callId = `call_${Math.random().toString(36).slice(2)}`
    let decide
    const decided = new Promise((resolve) => { decide = resolve })
    const created = await person.created('approval')
    const { answerer, lost } = faulty({}, { create: ['lost', () => decided] })
    const deciding = track(answerer.approve({ agent, toolName, callId }, () => Promise.resolve('next')))
    const rec = await person.approval(toolName)
    await person.decide(rec.id, { outcome: 'allowed-once' })
    decide()
    assert.equal(await within(deciding, 10_000, 'approval'), 'allowed-once')
    assert.equal(lost[0].id, rec.id)
    assert.equal(await person.created('approval'), created + 1, 'asked once')
  })

  test('a wait given up on withdraws a request no later ask could find', async () => {
    const text = unique('Rebuild the index?')
    const { answerer } = faulty({ retryFor: 1 }, { get: Array(1000).fill('refused') })
    const asking = track(answerer.ask({ questions: [{ id: 'q', question: text }] }))
    const rec = await person.question(text)
    assert.equal((await rejection(asking, 10_000)).code, 'ASKBRIDGE_UNREACHABLE')
    await within(Promise.all([...answerer.withdrawals]), 10_000, 'the withdrawal')
    assert.equal((await person.get('question', rec.id)).status, 'cancelled')
  })

  test('unloaded, a request no later ask could find is withdrawn; one under its call id is left', async () => {
    const fresh = unique('Resize the disk?')
    const keyed = unique('Resize the other disk?')
    const h = await harness()
    const lost = [
      track(h.ctx.userQuestions.ask({ agent: fakeAgent('session-unload'), questions: [{ id: 'q', question: fresh }] })),
      track(h.ctx.userQuestions.ask({ agent: fakeAgent('session-unload'), callId: `call_${Math.random().toString(36).slice(2)}`, questions: [{ id: 'q', question: keyed }] })),
    ]
    const [a, b] = [await person.question(fresh), await person.question(keyed)]
    await dispose(h.ctx)
    for (const p of lost) assert.equal((await rejection(p, 5000)).code, 'ASK_ABORTED')
    assert.equal((await eventually('question', a.id, (r) => r.status !== 'pending')).status, 'cancelled')
    assert.equal((await person.get('question', b.id)).status, 'pending', 'a restarted harness may re-attach to it')
  })

  test('unloaded: the unload waits for the withdrawals on their way, so a harness that then exits does not cut them off', async () => {
    let arrived, release
    const deleting = new Promise((resolve) => { arrived = resolve })
    const held = new Promise((resolve) => { release = resolve })
    const proxy = await proxyBridge(async (req, url, forward) => {
      if (req.method === 'DELETE') {
        arrived()
        await held
      }
      await forward()
    })
    try {
      const text = unique('Reindex the search?')
      const h = await harness({ url: `http://127.0.0.1:${proxy.address().port}` })
      const asking = track(h.ctx.userQuestions.ask({ agent: fakeAgent('session-unload-wait'), questions: [{ id: 'q', question: text }] }))
      const rec = await person.question(text)
      let disposed = false
      const disposing = dispose(h.ctx).then(() => { disposed = true })
      await within(deleting, 5000, 'the withdrawal at the proxy')
      assert.equal(disposed, false, 'the unload waits for the withdrawal')
      release()
      await within(disposing, 10_000, 'the unload')
      assert.equal((await person.get('question', rec.id)).status, 'cancelled', 'withdrawn by the time the unload ended')
      assert.equal((await rejection(asking, 5000)).code, 'ASK_ABORTED')
    } finally {
      release()
      proxy.closeAllConnections()
      proxy.close()
    }
  })

  test('unloaded, a withdrawal still being retried gets one last try', async () => {
    const text = unique('Stop the canary?')
    const { answerer, calls } = faulty({ retryFor: 30 }, { cancel: ['refused'] })
    const turn = new AbortController()
    const asking = track(answerer.ask({ questions: [{ id: 'q', question: text }], signal: turn.signal }))
    const rec = await person.question(text)
    turn.abort()
    assert.equal((await rejection(asking, 5000)).code, 'ASK_ABORTED')
    // The first try has failed once what it started has settled; its retry goes on.
    await within(Promise.all([...answerer.withdrawals]), 5000, 'the first try')
    answerer.close()
    await withdrawalsEnded(answerer, 5000, 'the last try')
    assert.equal(calls.cancel, 2)
    assert.equal((await person.get('question', rec.id)).status, 'cancelled')
  })

  test('the turn aborted while the bridge is slow to take the withdrawal: ASK_ABORTED at once, withdrawn after', async () => {
    const text = unique('Pause the rollout?')
    let release
    const slow = new Promise((resolve) => { release = resolve })
    const { answerer, calls } = faulty({}, { cancel: [() => slow], cancelByToolCall: [() => slow] })
    const turn = new AbortController()
    const asking = track(answerer.ask({ questions: [{ id: 'q', question: text }], signal: turn.signal }))
    const rec = await person.question(text)
    turn.abort()
    assert.equal((await rejection(asking, 1000)).code, 'ASK_ABORTED')
    assert.equal(calls.cancel, 1, 'the withdrawal is on its way')
    release()
    await withdrawalsEnded(answerer, 10_000, 'the withdrawal')
    assert.equal((await person.get('question', rec.id)).status, 'cancelled')
    answerer.close()
  })

  test('the turn aborted while its create and the bridge are slow: ASK_ABORTED at once, withdrawn by tool_call_id after', async () => {
    // A proxy holds the create, and the withdrawal by tool_call_id until
    // released, as a bridge slow to answer would.
    const held = []
    let heldOne
    const arrived = new Promise((resolve) => { heldOne = resolve })
    let release
    const slow = new Promise((resolve) => { release = resolve })
    const proxy = await proxyBridge(async (req, url, forward) => {
      if (req.method === 'POST') {
        held.push(forward)
        heldOne()
        return
      }
      if (req.method === 'DELETE') await slow
      await forward()
    })
    try {
      const { answerer } = faulty({ url: `http://127.0.0.1:${proxy.address().port}` }, {})
      const turn = new AbortController()
      const asking = track(answerer.ask({ questions: [{ id: 'q', question: unique('Pause the other rollout?') }], signal: turn.signal }))
      await within(arrived, 5000, 'the create at the proxy')
      turn.abort()
      assert.equal((await rejection(asking, 1000)).code, 'ASK_ABORTED')
      release()
      await withdrawalsEnded(answerer, 10_000, 'the withdrawal')
      const landed = await held[0]()
      assert.equal(landed.body.status, 'cancelled', 'the late create finds its request withdrawn')
      answerer.close()
    } finally {
      proxy.closeAllConnections()
      proxy.close()
    }
  })

  test('a withdrawal refused while the bridge restarts is tried again', async () => {
    const text = unique('Scale down?')
    const { answerer, calls } = faulty({}, { cancel: ['refused', 'refused'] })
    const turn = new AbortController()
    const asking = track(answerer.ask({ questions: [{ id: 'q', question: text }], signal: turn.signal }))
    const rec = await person.question(text)
    turn.abort()
    assert.equal((await rejection(asking, 5000)).code, 'ASK_ABORTED')
    await withdrawalsEnded(answerer, 10_000, 'the withdrawal')
    assert.equal(calls.cancel, 3)
    assert.equal((await person.get('question', rec.id)).status, 'cancelled')
    answerer.close()
  })
})
