/** Temp trees for the workspace tests: created under os.tmpdir(), removed after each test. */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync, lstatSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { TaskwardError } from '@taskward/protocol'
import { expect } from 'chai'

export function makeTempDir(prefix = 'taskward-stamp-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

export function removeTree(path: string) {
  rmSync(path, { recursive: true, force: true })
}

/** `files` maps relative paths to contents; a path ending in `/` is an (empty) directory. */
export function writeTree(root: string, files: Record<string, string | Buffer>) {
  for (const [path, content] of Object.entries(files)) {
    if (path.endsWith('/')) {
      mkdirSync(join(root, path), { recursive: true })
    } else {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), content)
    }
  }
}

const PINNED_SECONDS = 1_600_000_000

/**
 * Give every entry below `root` (and the root) the same fixed mtime, children first, so that two trees
 * or two states of a tree differ only in what a test changed on purpose.
 */
export function pinTimes(root: string, seconds = PINNED_SECONDS) {
  // Buffer paths: names that are not valid UTF-8 must be reached too.
  const visit = (path: Buffer) => {
    const stats = lstatSync(path)
    if (stats.isDirectory()) {
      for (const name of readdirSync(path, { encoding: 'buffer' })) visit(Buffer.concat([path, Buffer.from('/'), name]))
    }
    if (!stats.isSymbolicLink()) utimesSync(path, seconds, seconds)
  }
  visit(Buffer.from(root))
}

/** Await a rejection and check its TaskwardError code; returns the error for further checks. */
export async function rejectsWith(promise: Promise<unknown>, code: string): Promise<TaskwardError> {
  let caught: unknown
  try {
    await promise
  } catch (error) {
    caught = error
  }
  expect(caught, `expected a rejection with ${code}`).to.be.instanceOf(TaskwardError)
  const error = caught as TaskwardError
  expect(error.code, error.message).to.equal(code)
  return error
}

import { Context } from 'cordis'
import WorkspacePlugin, { type Config } from '../src'

/** A started Cordis context with the workspace plugin applied, as a host would have it. */
export async function startWorkspace(config: Partial<Config> = {}) {
  const ctx = new Context()
  ctx.plugin(WorkspacePlugin, config)
  await ctx.start()
  return ctx
}
