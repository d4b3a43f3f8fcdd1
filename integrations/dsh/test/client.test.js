// The bridge's HTTP client on its own: what it makes of a response, against
// a local HTTP server that answers as the bridge (or a proxy) would.

import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { test } from 'node:test'
import { BridgeClient, retryDelay } from '../lib/client.js'

const UNAVAILABLE = JSON.stringify({ error: { code: 'UNAVAILABLE', message: "the bridge can't reach its Redis; try again shortly" } })

/** The error BridgeClient rejects with for a GET answered with status, headers and body. */
async function refusal (status, headers, body) {
  const server = createServer((req, res) => {
    req.resume()
    res.writeHead(status, headers).end(body)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const client = new BridgeClient({ url: `http://127.0.0.1:${server.address().port}`, callTimeoutMs: 5000, graceMs: 5000 })
    return await client.get('question', 'abc', 0).then(() => assert.fail(`HTTP ${status} was taken for an answer`), (err) => err)
  } finally {
    server.close()
  }
}

test('a retry after a 503 (or 429) that says Retry-After waits that long, not the backoff, up to the longest backoff', async () => {
  for (const [header, want] of [
    ['1', 1000],
    ['2', 2000],
    ['3600', 5000], // the longest backoff
    [undefined, 200],
    ['0', 200],
    ['1.5', 200],
    ['Wed, 21 Oct 2026 07:28:00 GMT', 200],
  ]) {
    const err = await refusal(503, { 'content-type': 'application/json', ...(header === undefined ? {} : { 'retry-after': header }) }, UNAVAILABLE)
    assert.equal(err.code, 'UNAVAILABLE')
    assert.equal(retryDelay(200, err), want, `Retry-After ${header}: the pause after a backoff of 200 ms`)
  }
  // A proxy's own page, not the bridge's error.
  const err = await refusal(429, { 'content-type': 'text/html', 'retry-after': '3' }, '<html>Too Many Requests</html>')
  assert.equal(err.status, 429)
  assert.equal(retryDelay(200, err), 3000, "a proxy's 429 with Retry-After: 3")
})
