import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

/** A temp directory holding `files` (relative path → content). */
export async function tempWorkspace(files: Record<string, string> = {}, prefix = 'taskward-ws-') {
  const root = await mkdtemp(join(tmpdir(), prefix))
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true })
    await writeFile(join(root, path), content)
  }
  return root
}

export async function removeTree(path: string) {
  await rm(path, { recursive: true, force: true })
}
