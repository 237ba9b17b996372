import { expect } from 'chai'
import { spawn, type ChildProcess } from 'node:child_process'
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { freePort } from '@taskward/testkit'
import { dshInstall } from './dsh/dsh-host'
// @ts-expect-error plain ESM script without types
import { writeOperatorToken } from '../scripts/dsh/operator-token.mjs'

/*
 * `npm run dsh` with a kept home (TASKWARD_DSH_HOME): the operator token it prints a login link for opens
 * every Taskward route, so no file under that home that holds it may be readable by anyone else — the
 * file 0600, its directory 0700 — while the printed link still logs in. The real launcher, the real DSH.
 */
describe('npm run dsh keeps the operator token private', function () {
  this.timeout(600_000)
  let home: string
  let launcher: ChildProcess | undefined
  let output = ''

  before(async function () {
    const found = await dshInstall()
    if (!found.paths) {
      console.log(`      skipped: ${found.skip}`)
      return this.skip()
    }
    home = await mkdtemp(join(tmpdir(), 'taskward-dsh-kept-'))
    // What a user's own directory looks like: readable by everyone.
    await chmod(home, 0o755)
  })

  after(async () => {
    if (launcher && launcher.exitCode === null) {
      const exited = new Promise((resolve) => launcher!.on('exit', resolve))
      launcher.kill('SIGINT')
      const timer = setTimeout(() => launcher!.kill('SIGKILL'), 20_000)
      await exited
      clearTimeout(timer)
    }
    if (home) await rm(home, { recursive: true, force: true })
  })

  async function* files(dir: string): AsyncGenerator<string> {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules') continue
      const path = join(dir, entry.name)
      if (entry.isDirectory()) yield* files(path)
      else if (entry.isFile()) yield path
    }
  }

  it('writes the token only to 0600 files in 0700 directories, and the printed link logs in', async () => {
    const port = await freePort()
    launcher = spawn(process.execPath, ['scripts/dsh/run.mjs'], {
      env: {
        ...process.env, TASKWARD_DSH_HOME: home, PORT: String(port), DSH_TELEMETRY_DISABLED: '1',
        DEEPSEEK_BASE_URL: 'http://127.0.0.1:9', DEEPSEEK_API_KEY: 'taskward-test-key', NODE_OPTIONS: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    launcher.stdout!.on('data', (chunk) => { output += chunk })
    launcher.stderr!.on('data', (chunk) => { output += chunk })
    const link = await new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const found = /Taskward login link:\s+(\S+)/.exec(output)
        if (found) { clearInterval(timer); resolve(found[1]) }
        if (launcher!.exitCode !== null) { clearInterval(timer); reject(new Error(`npm run dsh exited ${launcher!.exitCode}:\n${output.slice(-3000)}`)) }
      }, 250)
    })
    const token = new URL(link).searchParams.get('token')!
    expect(token).to.have.length.greaterThan(20)

    const holders: string[] = []
    for await (const file of files(home)) {
      if (!(await readFile(file, 'utf8')).includes(token)) continue
      holders.push(file)
      expect((await stat(file)).mode & 0o777, `${file} mode`).to.equal(0o600)
      expect((await stat(dirname(file))).mode & 0o777, `${dirname(file)} mode`).to.equal(0o700)
    }
    expect(holders.map((file) => file.slice(home.length))).to.deep.equal(['/profiles/web/cordis.patch.yml'])

    // The token written that way is the one DSH's Taskward runs with: the printed link logs in.
    const login = await fetch(link, { redirect: 'manual' })
    expect(login.status).to.equal(303)
    expect(login.headers.get('set-cookie') ?? '').to.include('taskward_token=')
    const refused = await fetch(link.replace(token, `${token}x`), { redirect: 'manual' })
    expect(refused.status).to.equal(401)
  })
})

describe('the operator token in a kept DSH home', () => {
  let root: string
  beforeEach(async () => { root = await mkdtemp(join(tmpdir(), 'taskward-dsh-token-')) })
  afterEach(() => rm(root, { recursive: true, force: true }))

  it('tightens an existing 0755 profile and 0644 patch, keeping the layer\'s other entries and the row\'s settings', async () => {
    const profile = join(root, 'profiles', 'web')
    await mkdir(profile, { recursive: true, mode: 0o755 })
    await chmod(profile, 0o755)
    const file = join(profile, 'cordis.patch.yml')
    await writeFile(file, JSON.stringify([{ id: 'hmr', disabled: false }, { id: 'taskward', config: { operatorToken: 'old', prefix: '/tw' } }]), { mode: 0o644 })
    writeOperatorToken(root, 'new-token')
    expect((await stat(profile)).mode & 0o777).to.equal(0o700)
    expect((await stat(file)).mode & 0o777).to.equal(0o600)
    const text = await readFile(file, 'utf8')
    expect(text).to.include('new-token').and.include('/tw').and.include('hmr').and.not.include('old')
  })

  it('refuses a profile directory that is a symlink, writing nothing', async () => {
    const elsewhere = join(root, 'elsewhere')
    await mkdir(elsewhere)
    await mkdir(join(root, 'home', 'profiles'), { recursive: true })
    await symlink(elsewhere, join(root, 'home', 'profiles', 'web'))
    expect(() => writeOperatorToken(join(root, 'home'), 'secret')).to.throw(/symlink/)
    expect(await readdir(elsewhere)).to.deep.equal([])
  })
})
