import { TestHost } from '@taskward/testkit'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
const dataDir = await mkdtemp(join(tmpdir(), 'taskward-prof-'))
const host = await TestHost.boot({ dataDir, database: { driver: 'sqlite', path: join(dataDir, 'taskward.db'), durability: 'os' } })
const s = await host.ctx.sessions.create({ cwd: dataDir })
for (let i = 0; i < 6000; i++) await s.append('x', { i, text: 'lorem ipsum '.repeat(10) })
await host.dispose()
