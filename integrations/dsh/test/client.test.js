// The bridge's HTTP client on its own: what it makes of a response, against
// a local HTTP server that answers as the bridge (or a proxy) would.

import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { test } from 'node:test'
import { BridgeClient, retryDelay, transient } from '../lib/client.js'

const UNAVAILABLE = JSON.stringify({ error: { code: 'UNAVAILABLE', message: "the bridge can't reach its Redis; try again shortly" } })

/** The error BridgeClient rejects with for a GET answered with status, headers and body; base is the client's URL. */
async function refusal (status, headers, body, base) {
  const server = createServer((req, res) => {
    req.resume()
    res.writeHead(status, headers).end(body)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const url = `http://127.0.0.1:${server.address().port}`
    base?.(url)
    const client = new BridgeClient({ url, callTimeoutMs: 5000, graceMs: 5000 })
    return await client.get('question', 'abc', 0).then(() => assert.fail(`HTTP ${status} was taken for an answer`), (err) => err)
  } finally {
    server.close()
  }
}

test("a reply that is not the bridge's JSON error is never shown; one from no bridge API says the URL is wrong", async () => {
  const PAGE = '<html><head><title>Oops</title></head><body><h1>Something</h1><p>went wrong</p></body></html>'
  for (const { status, headers = { 'content-type': 'text/html' }, body = PAGE, want, wrongURL, retried } of [
    { status: 404, want: () => 'wrong bridge URL: what answers there has no bridge API (HTTP 404 Not Found)', wrongURL: true, retried: false },
    { status: 405, want: () => 'wrong bridge URL: what answers there has no bridge API (HTTP 405 Method Not Allowed)', wrongURL: true, retried: false },
    { status: 501, want: () => 'wrong bridge URL: what answers there has no bridge API (HTTP 501 Not Implemented)', wrongURL: true, retried: false },
    // A TLS server (nginx, Go's) at an http:// URL.
    {
      status: 400,
      headers: { 'content-type': 'text/plain' },
      body: 'Client sent an HTTP request to an HTTPS server.\n',
      want: (url) => `wrong bridge URL: what answers there takes HTTPS: use ${url.replace('http:', 'https:')}`,
      wrongURL: true,
      retried: false,
    },
    { status: 400, want: () => 'HTTP 400 Bad Request, not from the bridge (the reply is not its JSON error)', wrongURL: false, retried: false },
    // A proxy in front of a bridge that is down: retried, as before.
    { status: 502, want: () => 'HTTP 502 Bad Gateway, not from the bridge (the reply is not its JSON error)', wrongURL: false, retried: true },
    { status: 500, headers: { 'content-type': 'text/plain' }, body: 'internal error', want: () => 'HTTP 500 Internal Server Error, not from the bridge (the reply is not its JSON error)', wrongURL: false, retried: false },
    // JSON, but not the bridge's error.
    { status: 404, headers: { 'content-type': 'application/json' }, body: '{"detail":"Not Found"}', want: () => 'wrong bridge URL: what answers there has no bridge API (HTTP 404 Not Found)', wrongURL: true, retried: false },
    // A web server that answers every path with its page.
    { status: 200, want: () => "wrong bridge URL: what answers there replied to GET /v1/questions/abc with text/html, not the bridge's JSON", wrongURL: true, retried: false },
  ]) {
    let url
    const err = await refusal(status, headers, body, (u) => { url = u })
    assert.equal(err.message, want(url), `HTTP ${status} ${body}`)
    assert.equal(err.status, status)
    assert.equal(err.code, '')
    assert.equal(err.wrongURL, wrongURL, `HTTP ${status} ${body}`)
    assert.equal(transient(err), retried, `HTTP ${status} ${body}`)
  }
})

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
