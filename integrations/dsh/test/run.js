// npm test: builds the bridge once, then runs the test files against that
// build. Each file building its own took one past its 60 s timeout on a
// fresh machine, where the Go build cache is cold and the builds share
// the cores. Arguments name the files to run (all of test/*.test.js when
// none).

import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BUILT_BRIDGE, buildBridge, cleanup } from './bridge.js'

const here = dirname(fileURLToPath(import.meta.url))
const files = process.argv.length > 2
  ? process.argv.slice(2)
  : readdirSync(here).filter((f) => f.endsWith('.test.js')).sort().map((f) => join(here, f))

const { bin, dir } = await buildBridge()
const child = spawn(process.execPath, ['--test', '--test-timeout=60000', ...files], {
  stdio: 'inherit',
  env: { ...process.env, [BUILT_BRIDGE]: bin },
})
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig))
const code = await new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))))
await cleanup(dir)
process.exit(code)
