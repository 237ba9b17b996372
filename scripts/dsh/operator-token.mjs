// Where `npm run dsh` keeps the operator token it prints a login link for: the `taskward` row of the web
// profile's own patch layer, the one layer DSH reads that is ours to write. The token opens every
// Taskward route (a repair click included), so the file is 0600 inside a 0700 profile directory — also
// when TASKWARD_DSH_HOME keeps the home across runs and `dsh plugin add` made the directory 0755.
import { chmodSync, closeSync, existsSync, fchmodSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import yaml from 'js-yaml'

/** Why `path` cannot hold a secret of ours (a symlink, another user's), or undefined. */
function unsafe(path, kind) {
  const stat = lstatSync(path)
  if (stat.isSymbolicLink()) return `${path} is a symlink`
  if (kind === 'dir' ? !stat.isDirectory() : !stat.isFile()) return `${path} is not a ${kind === 'dir' ? 'directory' : 'file'}`
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) return `${path} belongs to another user`
  return undefined
}

/**
 * Set `operatorToken` of the `taskward` row in `<home>/profiles/<profile>/cordis.patch.yml`, keeping the
 * layer's other entries. Returns the patch file's path. Throws (writing nothing) when the profile
 * directory or the file is a symlink or not ours.
 */
export function writeOperatorToken(home, token, profile = 'web') {
  const dir = join(home, 'profiles', profile)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const why = unsafe(dir, 'dir')
  if (why) throw new Error(`Refusing to write the operator token: ${why}. Use another TASKWARD_DSH_HOME.`)
  // Private before the token is in it: the directory is what keeps other users out of the file.
  chmodSync(dir, 0o700)
  const file = join(dir, 'cordis.patch.yml')
  let entries = []
  let config = {}
  if (existsSync(file)) {
    const bad = unsafe(file, 'file')
    if (bad) throw new Error(`Refusing to write the operator token: ${bad}. Use another TASKWARD_DSH_HOME.`)
    const layer = yaml.load(readFileSync(file, 'utf8')) ?? []
    entries = Array.isArray(layer) ? layer : []
    // The row's other settings (checks, prefix) stay: a patch entry replaces `config` whole.
    const own = entries.find((entry) => entry?.id === 'taskward')
    if (own?.config && typeof own.config === 'object') config = own.config
    entries = entries.filter((entry) => entry?.id !== 'taskward')
  }
  // A new file created 0600 and renamed over the old one: the token is never in a file others could read,
  // not even for the moment between a write and a chmod.
  const scratch = `${file}.${process.pid}.tmp`
  rmSync(scratch, { force: true })
  const fd = openSync(scratch, 'wx', 0o600)
  try {
    fchmodSync(fd, 0o600)
    writeSync(fd, yaml.dump([...entries, { id: 'taskward', config: { ...config, operatorToken: token } }]))
  } finally { closeSync(fd) }
  renameSync(scratch, file)
  return file
}
