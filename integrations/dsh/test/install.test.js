// The npm install commands of README.md, run as a new user would: into a
// fresh program (a "profile" below) that runs cordis itself, with its own
// cordis and dsh-user-questions. The plugin must load there and share the
// program's dsh-user-questions, so the errors it rejects with are the
// harness's UserQuestionError. (The README's other command, `dsh plugin
// add file:...` into a dsh profile, needs the dsh command and pnpm, which
// CI does not have.)

import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { test } from 'node:test'

const run = promisify(execFile)
const pkgDir = dirname(dirname(fileURLToPath(import.meta.url)))

/**
 * The README Install section's commands for npm, for this checkout: the
 * line it adds to the program's .npmrc, and the npm install command's
 * arguments.
 */
async function readmeInstall () {
  const readme = await readFile(join(pkgDir, 'README.md'), 'utf8')
  const section = readme.split(/^## /m).find((s) => s.startsWith('Install'))
  assert.ok(section, 'README.md has no Install section')
  const lines = section.split('\n')
  const npmrc = lines.map((l) => /^echo '([^']*)' >> \.npmrc\s*$/.exec(l)?.[1]).find(Boolean)
  assert.ok(npmrc, "the Install section has no `echo '...' >> .npmrc` line")
  const line = lines.find((l) => /^npm install .*integrations\/dsh\s*$/.test(l))
  assert.ok(line, 'the Install section has no `npm install .../integrations/dsh` line')
  return { npmrc, args: line.trim().replace('/path/to/askbridge/integrations/dsh', pkgDir).split(/\s+/).slice(1) }
}

test('the README install commands give the profile a plugin that uses its dsh-user-questions, and a later npm install keeps it so', async () => {
  const { npmrc, args } = await readmeInstall()
  const lock = JSON.parse(await readFile(join(pkgDir, 'package-lock.json'), 'utf8'))
  const pinned = (name) => `${name}@${lock.packages[`node_modules/${name}`].version}`
  const profile = await mkdtemp(join(tmpdir(), 'askbridge-dsh-profile-'))
  try {
    await writeFile(join(profile, 'package.json'), JSON.stringify({ name: 'profile', private: true, type: 'module' }))
    const quiet = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error']
    await run('npm', ['install', ...quiet, pinned('@deepseek-ai/cordis'), pinned('@deepseek-ai/dsh-user-questions')], { cwd: profile })
    await writeFile(join(profile, '.npmrc'), `${npmrc}\n`, { flag: 'a' })
    await run('npm', [...args, ...quiet], { cwd: profile })

    const probe = join(profile, 'probe.js')
    await writeFile(probe, [
      "import { UserQuestionError } from '@deepseek-ai/dsh-user-questions'",
      "import plugin, { UserQuestionError as Theirs } from '@askbridge/dsh'",
      "console.log(JSON.stringify({ name: plugin.name, same: Theirs === UserQuestionError }))",
    ].join('\n'))
    const { stdout } = await run(process.execPath, [probe], { cwd: profile })
    assert.deepEqual(JSON.parse(stdout), { name: 'askbridge', same: true })

    // A later plain npm install (a dependency added, a fresh clone of the
    // program) must not turn the copy into a link to the checkout, whose
    // own node_modules (npm ci there) has a second dsh-user-questions.
    await run('npm', ['install', ...quiet], { cwd: profile })
    const again = await run(process.execPath, [probe], { cwd: profile })
    assert.deepEqual(JSON.parse(again.stdout), { name: 'askbridge', same: true }, 'after a plain npm install')
  } finally {
    await rm(profile, { recursive: true, force: true })
  }
})
