import { closeSync, existsSync, fstatSync, openSync, readSync, statSync } from 'node:fs'
import { TaskwardError } from '@taskward/protocol'

const MAGIC = Buffer.from('SQLite format 3\0', 'latin1')

export function corrupt(file: string, what: string) {
  return new TaskwardError('STORE_CORRUPT',
    `The database file ${file} is damaged: ${what}. The host did not start and wrote nothing. Next steps: stop `
    + 'anything else that writes this file, move the damaged file (and its -wal file) aside, and restore the newest '
    + 'backup in its place (docs/operations.md, "Backup and restore"); `npm run doctor` re-checks it.',
    { file })
}

/**
 * Whether `wal` holds, in its current generation (frames salted like its header), a frame of page 1
 * equal byte for byte to `pageOne`: the state a checkpoint leaves when it is killed after copying
 * page 1. A WAL that merely has frames proves nothing: one moved in from another database has them too.
 * WAL layout: a 32-byte header (page size at 8, salts at 16 and 20), then frames of a 24-byte header
 * (page number at 0, salts at 8 and 12) and one page.
 */
function walCopiedPageOne(wal: string, pageOne: Buffer): boolean {
  let fd: number
  try {
    fd = openSync(wal, 'r')
  } catch {
    return false
  }
  try {
    const size = fstatSync(fd).size
    const header = Buffer.alloc(32)
    if (size < 32 || readSync(fd, header, 0, 32, 0) !== 32) return false
    const pageSize = header.readUInt32BE(8)
    if (pageSize !== pageOne.length) return false
    const frameHeader = Buffer.alloc(24)
    const page = Buffer.alloc(pageSize)
    for (let at = 32; at + 24 + pageSize <= size; at += 24 + pageSize) {
      if (readSync(fd, frameHeader, 0, 24, at) !== 24) return false
      if (frameHeader.readUInt32BE(8) !== header.readUInt32BE(16) || frameHeader.readUInt32BE(12) !== header.readUInt32BE(20)) return false
      if (frameHeader.readUInt32BE(0) !== 1) continue
      if (readSync(fd, page, 0, pageSize, at + 24) === pageSize && page.equals(pageOne)) return true
    }
    return false
  } finally {
    closeSync(fd)
  }
}

/**
 * What the file on disk is, before SQLite opens it (SQLite would take a 0-byte or missing file for a
 * new, empty database and start "healthy"). The host creates a database by writing a complete, synced
 * file under a temp name and linking it into place, so a 0-byte file at the path is never the host's
 * own: it is a truncated database. A WAL without its database means the database file was removed.
 */
export function checkFileHeader(file: string): 'missing' | 'present' {
  if (!existsSync(file)) {
    if (existsSync(file + '-wal')) throw corrupt(file, 'the file is missing but its write-ahead log (-wal) is there, so it was removed or moved')
    return 'missing'
  }
  const stat = statSync(file)
  if (!stat.isFile()) throw corrupt(file, 'it is not a regular file')
  if (stat.size === 0) throw corrupt(file, 'it is empty (0 bytes), so it was truncated')
  if (stat.size < 100) throw corrupt(file, `it is only ${stat.size} bytes, shorter than a SQLite header`)
  const header = Buffer.alloc(100)
  const fd = openSync(file, 'r')
  try {
    readSync(fd, header, 0, 100, 0)
  } finally {
    closeSync(fd)
  }
  if (!header.subarray(0, 16).equals(MAGIC)) throw corrupt(file, 'it does not start with the SQLite header ("SQLite format 3"), so it is not a SQLite database or was overwritten')
  const rawPageSize = header.readUInt16BE(16)
  const pageSize = rawPageSize === 1 ? 65536 : rawPageSize
  if (pageSize < 512 || (pageSize & (pageSize - 1)) !== 0) throw corrupt(file, `its header names an impossible page size (${rawPageSize})`)
  // The in-header page count is valid when the change counter matches "version-valid-for", except
  // inside a checkpoint: it copies page 1 before the pages that grow the file, so a host killed inside
  // one leaves a header counting pages that only the WAL holds yet (and page 1 equal to the WAL's copy
  // of it). SQLite then reads the size from the WAL and finishes the copy; `quick_check` after opening
  // catches real damage.
  const pages = header.readUInt32BE(28)
  if (pages > 0 && header.readUInt32BE(24) === header.readUInt32BE(92) && stat.size < pages * pageSize
    && !(stat.size >= pageSize && walCopiedPageOne(file + '-wal', pageOne(file, pageSize)))) {
    throw corrupt(file, `it holds ${stat.size} bytes but its header counts ${pages} pages of ${pageSize} bytes, so it was truncated`)
  }
  return 'present'
}

function pageOne(file: string, pageSize: number): Buffer {
  const page = Buffer.alloc(pageSize)
  const fd = openSync(file, 'r')
  try {
    readSync(fd, page, 0, pageSize, 0)
  } finally {
    closeSync(fd)
  }
  return page
}
