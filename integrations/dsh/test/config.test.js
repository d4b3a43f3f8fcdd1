// The plugin's config: where the bridge's URL and token come from when the
// config leaves them out, and how a config the plugin can't use is refused.

import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { after, before, describe, test } from 'node:test'
import { Context } from '@deepseek-ai/cordis'
import { UserQuestionService } from '@deepseek-ai/dsh-user-questions'
import askbridge, { resolveConfig } from '../lib/index.js'
import { ASK_TOKEN, Person, buildBridge, cleanup, startBridge, unique, within, writeConfig } from './bridge.js'

const ENV = ['ASKBRIDGE_URL', 'ASKBRIDGE_TOKEN', 'BRIDGE_SERVER', 'BRIDGE_TOKEN']

/** Run fn with exactly the variables of `vars` set among ENV, then put the environment back. */
async function withEnv (vars, fn) {
  const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]))
  for (const k of ENV) delete process.env[k]
  Object.assign(process.env, vars)
  try {
    return await fn()
  } finally {
    for (const k of ENV) {
      if (saved[k] === undefined) delete process.env[k]
      else process.env[k] = saved[k]
    }
  }
}

describe('the bridge and token from the environment', () => {
  test('BRIDGE_SERVER and BRIDGE_TOKEN, as the CLI, MCP server and Agno example read them', async () => {
    await withEnv({ BRIDGE_SERVER: 'http://bridge.test:9000/', BRIDGE_TOKEN: 'cli-token' }, () => {
      const o = resolveConfig({})
      assert.equal(o.url, 'http://bridge.test:9000')
      assert.equal(o.token, 'cli-token')
    })
  })

  test("the plugin's own ASKBRIDGE_URL and ASKBRIDGE_TOKEN come first", async () => {
    await withEnv({
      ASKBRIDGE_URL: 'http://own.test:1', ASKBRIDGE_TOKEN: 'own-token',
      BRIDGE_SERVER: 'http://cli.test:2', BRIDGE_TOKEN: 'cli-token',
    }, () => {
      const o = resolveConfig({})
      assert.equal(o.url, 'http://own.test:1')
      assert.equal(o.token, 'own-token')
    })
  })

  test('the config comes before either', async () => {
    await withEnv({
      ASKBRIDGE_URL: 'http://own.test:1', ASKBRIDGE_TOKEN: 'own-token',
      BRIDGE_SERVER: 'http://cli.test:2', BRIDGE_TOKEN: 'cli-token',
    }, () => {
      const o = resolveConfig({ url: 'http://config.test:3', token: 'config-token' })
      assert.equal(o.url, 'http://config.test:3')
      assert.equal(o.token, 'config-token')
    })
  })

  test('an empty variable is unset, as the CLI takes it', async () => {
    await withEnv({ ASKBRIDGE_URL: '', ASKBRIDGE_TOKEN: '', BRIDGE_SERVER: 'http://cli.test:2', BRIDGE_TOKEN: 'cli-token' }, () => {
      const o = resolveConfig({})
      assert.equal(o.url, 'http://cli.test:2')
      assert.equal(o.token, 'cli-token')
    })
    await withEnv({}, () => {
      const o = resolveConfig({})
      assert.equal(o.url, 'http://127.0.0.1:8080')
      assert.equal(o.token, '')
    })
  })

  test('a bad URL names the variable it came from', async () => {
    await withEnv({ BRIDGE_SERVER: 'bridge.test:9000' }, () => {
      assert.throws(() => resolveConfig({}), (err) => err instanceof TypeError &&
        err.message === 'askbridge: $BRIDGE_SERVER "bridge.test:9000" must be an http:// or https:// URL')
    })
    await withEnv({ ASKBRIDGE_URL: 'not a url' }, () => {
      assert.throws(() => resolveConfig({}), /^TypeError: askbridge: \$ASKBRIDGE_URL "not a url" is not a URL/)
    })
  })
})

describe('a key the plugin does not know', () => {
  test('is refused, naming it, what it may have meant, and the keys there are', () => {
    assert.throws(() => resolveConfig({ url: 'http://127.0.0.1:1', expires_in: '30m' }), (err) => err instanceof TypeError &&
      err.message === "askbridge: config.expires_in (did you mean expiresIn?) is not a key of the plugin's config; " +
        'its keys are url, token, route, expiresIn, caller, pollWait, retryFor, timeout, questions, approvals')
    assert.throws(() => resolveConfig({ PollWait: 5, bridge: 'x' }),
      /^TypeError: askbridge: config\.PollWait \(did you mean pollWait\?\), config\.bridge are not keys of the plugin's config; its keys are /)
    assert.throws(() => resolveConfig('http://127.0.0.1:1'), /^TypeError: askbridge: config must be an object with the keys url, /)
  })

  test("the keys it names are index.d.ts's Config, each of which is taken", async () => {
    const dts = await readFile(new URL('../lib/index.d.ts', import.meta.url), 'utf8')
    const body = dts.match(/export interface Config \{([\s\S]*?)\n\}/)[1]
    const declared = [...body.matchAll(/^ {2}(\w+)\?:/gm)].map((m) => m[1])
    const named = (() => {
      try { resolveConfig({ nope: 1 }) } catch (err) { return err.message.split('its keys are ')[1].split(', ') }
    })()
    assert.deepEqual(named, declared)
    const sample = {
      url: 'http://127.0.0.1:1', token: 't', route: 'r', expiresIn: '30m', caller: 'c',
      pollWait: 5, retryFor: 5, timeout: 5, questions: true, approvals: false,
    }
    assert.deepEqual(Object.keys(sample).sort(), [...declared].sort())
    assert.doesNotThrow(() => resolveConfig(sample))
  })

  test('fails the plugin\'s load, as its other config errors do, and answers nothing', async () => {
    const ctx = new Context()
    try {
      await ctx.plugin(UserQuestionService)
      await assert.rejects(async () => { await ctx.plugin(askbridge, { url: 'http://127.0.0.1:1', expires_in: '30m' }) },
        (err) => err instanceof TypeError && /config\.expires_in \(did you mean expiresIn\?\)/.test(err.message))
      await assert.rejects(ctx.userQuestions.ask({ questions: [{ id: 'a', question: 'x' }] }), { code: 'NO_PROVIDER' })
    } finally {
      await ctx.fiber.dispose()
    }
  })
})

describe('a config every ask would fail on fails the load instead', () => {
  const SECRET = 'hunter2-s3cret'

  test('a token with a line break or a character that is not ASCII, naming where it came from, never showing it', async () => {
    const cases = [
      [{ token: `${SECRET}\nsecond-line` }, {}, 'config.token', 'a line break'],
      [{}, { ASKBRIDGE_TOKEN: `${SECRET}\r\nx` }, '$ASKBRIDGE_TOKEN', 'a line break'],
      [{}, { BRIDGE_TOKEN: `${SECRET}\u0007x` }, '$BRIDGE_TOKEN', 'a control character'],
      [{ token: `${SECRET}-tök€n` }, {}, 'config.token', 'a character that is not ASCII'],
    ]
    for (const [config, env, from, what] of cases) {
      await withEnv(env, () => {
        assert.throws(() => resolveConfig({ url: 'http://127.0.0.1:1', ...config }), (err) => {
          assert.ok(err instanceof TypeError, err.stack)
          assert.ok(err.message.startsWith(`askbridge: ${from} holds ${what} `), err.message)
          assert.ok(!err.message.includes(SECRET), 'the token is not in the error')
          return true
        })
      })
    }
    // Whitespace at its ends is no part of it, as fetch sends it.
    await withEnv({ ASKBRIDGE_TOKEN: ` ${SECRET}\n` }, () => assert.equal(resolveConfig({}).token, SECRET))
  })

  test('a URL with a password, refused without showing it', async () => {
    for (const [config, env, from] of [
      [{ url: `http://dsh:${SECRET}@127.0.0.1:8080` }, {}, 'config.url'],
      [{}, { ASKBRIDGE_URL: `https://dsh:${SECRET}@bridge.test` }, '$ASKBRIDGE_URL'],
    ]) {
      await withEnv(env, () => {
        assert.throws(() => resolveConfig(config), (err) => {
          assert.ok(err instanceof TypeError, err.stack)
          assert.ok(err.message.startsWith(`askbridge: ${from} carries a user name or password`), err.message)
          assert.ok(!err.message.includes(SECRET), 'the password is not in the error')
          return true
        })
      })
    }
  })

  test('a URL with a query or a fragment, to which /v1/... can\'t be added', () => {
    for (const url of ['http://127.0.0.1:8080/?token=x', 'http://127.0.0.1:8080/#inbox', 'http://127.0.0.1:8080?']) {
      assert.throws(() => resolveConfig({ url }), (err) => err instanceof TypeError &&
        err.message === `askbridge: config.url ${JSON.stringify(url)} must be the bridge's base URL, without a query or fragment: the plugin adds /v1/... to it`)
    }
    assert.equal(resolveConfig({ url: 'https://tools.test/askbridge/' }).url, 'https://tools.test/askbridge')
  })

  test('a route name longer than the bridge takes', () => {
    assert.throws(() => resolveConfig({ route: 'é'.repeat(51) }), (err) => err instanceof TypeError &&
      err.message === "askbridge: config.route is 102 bytes long; the bridge's route names are at most 100")
    assert.equal(resolveConfig({ route: 'é'.repeat(50) }).route, 'é'.repeat(50))
  })

  describe('expiresIn, read as the bridge reads it', () => {
    let build, bridge

    before(async () => {
      build = await buildBridge()
      bridge = await startBridge(build.bin, await writeConfig(build.dir))
    })

    after(async () => {
      await bridge?.stop()
      await cleanup(build?.dir)
    })

    test('what the bridge refuses fails the load, naming the key; what it takes loads', async () => {
      const refused = ['30 minutes', '1d', '-5m', '-1', '5m ', 'P1D', '277778h', '2e9', 1e10, -1, Infinity, NaN, true, {}]
      const taken = ['30m', '1h30m', '1.5h', '90s', '500ms', '1800', '1e3', '.5', '277777h', '1e9', 1800, 0.5, 1e9]
      for (const value of refused) {
        assert.throws(() => resolveConfig({ expiresIn: value }), (err) => err instanceof TypeError &&
          err.message.startsWith(`askbridge: config.expiresIn ${typeof value === 'string' ? JSON.stringify(value) : String(value)} `), String(value))
      }
      for (const value of taken) assert.equal(resolveConfig({ expiresIn: value }).expiresIn, value)
      // The bridge agrees: it takes every value the plugin takes, and refuses
      // the strings and numbers the plugin refuses (JSON has no NaN or Infinity).
      const ask = async (value) => {
        const resp = await fetch(`${bridge.url}/v1/questions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ASK_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ questions: [{ id: 'q', question: unique('How long?') }], expires_in: value }),
        })
        const body = await resp.json()
        if (resp.ok) {
          await fetch(`${bridge.url}/v1/questions/${body.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ASK_TOKEN}` } })
        }
        return resp.status
      }
      for (const value of taken) assert.equal(await ask(value), 201, `the bridge takes ${JSON.stringify(value)}`)
      for (const value of refused.filter((v) => typeof v === 'string' || Number.isFinite(v))) {
        assert.equal(await ask(value), 400, `the bridge refuses ${JSON.stringify(value)}`)
      }
    })
  })
})

describe('a harness with only BRIDGE_SERVER and BRIDGE_TOKEN set', () => {
  let build, bridge, ctx

  before(async () => {
    build = await buildBridge()
    bridge = await startBridge(build.bin, await writeConfig(build.dir))
  })

  after(async () => {
    await ctx?.fiber.dispose()
    await bridge?.stop()
    await cleanup(build?.dir)
  })

  test('asks that bridge with that token', async () => {
    await withEnv({ BRIDGE_SERVER: bridge.url, BRIDGE_TOKEN: ASK_TOKEN }, async () => {
      ctx = new Context()
      await ctx.plugin(UserQuestionService)
      await ctx.plugin(askbridge, { pollWait: 5 })
    })
    // The provider is registered once the userQuestions service is injected.
    const deadline = Date.now() + 5000
    while (ctx.userQuestions.provider === undefined) {
      if (Date.now() > deadline) throw new Error('askbridge did not register as the userQuestions provider')
      await new Promise((resolve) => setImmediate(resolve))
    }
    const text = unique('Ship it?')
    const asking = ctx.userQuestions.ask({ questions: [{ id: 'ship', question: text, options: [{ label: 'Yes' }, { label: 'No' }] }] })
    asking.catch(() => {})
    const person = new Person(bridge.url)
    const rec = await person.question(text)
    await person.answer(rec.id, [{ id: 'ship', selected: ['Yes'] }])
    assert.deepStrictEqual(await within(asking, 10_000, 'ask'), { answers: [{ id: 'ship', selected: ['Yes'] }] })
  })
})
