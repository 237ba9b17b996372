import { expect } from 'chai'
import { Context } from 'cordis'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { DshConnectionContract } from '../adapters/dsh/src/connection'

/*
 * Taskward's routes on a DSH-shaped web server: a real node http server that dispatches one prefix
 * route the way DSH's webServer does (handler(req, res)), the adapter's connection on it.
 */
describe('DSH connection: Taskward\'s routes on DSH\'s web server', () => {
  let server: Server
  let connection: DshConnectionContract
  let origin: string
  const token = 'T'.repeat(43)

  before(async () => {
    let mounted: ((req: IncomingMessage, res: ServerResponse) => void) | undefined
    server = createServer((req, res) => mounted ? mounted(req, res) : res.end())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as AddressInfo).port
    origin = `http://127.0.0.1:${port}`
    const ctx = new Context()
    connection = new DshConnectionContract(ctx, { register: ({ handler }: any) => { mounted = handler; return () => {} } } as any, '/taskward', token, () => port)
    connection.mount()
    connection.register({ path: '/boom', methods: ['GET'], access: 'operator', handler: () => { throw new Error('ENOENT: /home/someone/.dsh/secret-path') } })
  })

  after(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it('answers an unexpected failure as INTERNAL without its message (paths stay in the log)', async () => {
    const response = await fetch(`${origin}/taskward/boom`, { headers: { authorization: `Bearer ${token}` } })
    expect(response.status).to.equal(500)
    const body = await response.json() as any
    expect(body.code).to.equal('INTERNAL')
    expect(JSON.stringify(body)).to.not.include('secret-path')
  })
})
