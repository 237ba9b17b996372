// What the bundled recovery plugin takes from `@taskward/plugin-database` (its sandbox hides the host's
// data directory from every check), and nothing else: minato never enters the DSH bundle (pack.mjs).
// Inside DSH the host's data is DSH_HOME (sessions, credentials, the profile's plugins).
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'

export function dataDirectory(env = process.env) {
  return resolve(env.DSH_HOME || join(homedir(), '.dsh'))
}
