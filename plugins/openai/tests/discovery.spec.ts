import { expect } from 'chai'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { discoverContext } from '../src'
import { KEY } from './helpers'

/** A loopback endpoint answering with `handle`; `run` gets its base URL. */
async function withEndpoint(handle: (req: IncomingMessage, res: ServerResponse) => void, run: (baseURL: string) => Promise<void>) {
  const server = createServer(handle)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`)
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
}

/** Context discovery against hostile answers: what an endpoint says is read bounded, in time and in size. */
describe('plugin-openai: context discovery against hostile answers', function () {
  this.timeout(20_000)

  it('an /api/show whose parameters are a long blank text is read in linear time (no backtracking pattern over it)', async function () {
    // 150,000 newlines before num_ctx: the former pattern `(?:^|\n)\s*num_ctx` blocked the event loop
    // about 20 s over them (quadratic, retried after each newline), now well under a second.
    this.timeout(5_000)
    const parameters = '\n'.repeat(150_000) + 'stop "<|im_end|>"\n  num_ctx   8192  \n' + ' \n'.repeat(100_000) + 'temperature 0'
    await withEndpoint((req, res) => {
      res.writeHead(req.url === '/api/show' ? 200 : 404, { 'content-type': 'application/json' })
      res.end(req.url === '/api/show' ? JSON.stringify({ parameters, model_info: {} }) : '{}')
    }, async (baseURL) => {
      const found = await discoverContext({ baseURL, model: 'qwen', apiKey: KEY, timeoutMs: 10_000 })
      expect(found?.tokens).to.equal(8192)
    })
  })

  it('an answer that never ends is cut off at the size cap, not read for as long as the timeout allows', async () => {
    let sent = 0
    let closedAt: number | undefined
    const block = Buffer.alloc(1 << 20, 0x20)
    await withEndpoint((req, res) => {
      if (req.url !== '/v1/models') {
        res.writeHead(404).end('{}')
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"data":[')
      res.on('close', () => { closedAt ??= sent })
      // 256 MiB of blanks, as fast as the reader takes them.
      const pump = () => {
        while (sent < 256 << 20 && !res.destroyed) {
          sent += block.length
          if (!res.write(block)) return void res.once('drain', pump)
        }
        if (!res.destroyed) res.end(']}')
      }
      pump()
    }, async (baseURL) => {
      expect(await discoverContext({ baseURL, model: 'qwen', apiKey: KEY, timeoutMs: 15_000 })).to.equal(undefined)
      while (closedAt === undefined) await new Promise((resolve) => setTimeout(resolve, 10))
      expect(closedAt).to.be.below(64 << 20)
    })
  })

  it('a stated size that is no context (true, 1, 10^15, an array) discovers nothing: the route keeps its default', async () => {
    for (const stated of [true, 1, 1e15, [8192], '8192x']) {
      await withEndpoint((req, res) => {
        res.writeHead(req.url === '/v1/models' ? 200 : 404, { 'content-type': 'application/json' })
        res.end(req.url === '/v1/models' ? JSON.stringify({ data: [{ id: 'qwen', max_model_len: stated }] }) : '{}')
      }, async (baseURL) => {
        expect(await discoverContext({ baseURL, model: 'qwen', apiKey: KEY }), JSON.stringify(stated)).to.equal(undefined)
      })
    }
    // Ollama's model card: a trained context of 1 is no Ollama default either.
    await withEndpoint((req, res) => {
      res.writeHead(req.url === '/api/show' ? 200 : 404, { 'content-type': 'application/json' })
      res.end(req.url === '/api/show' ? JSON.stringify({ parameters: 'num_ctx 1', model_info: { 'qwen2.context_length': 1 } }) : '{}')
    }, async (baseURL) => {
      expect((await discoverContext({ baseURL, model: 'qwen', apiKey: KEY }))?.tokens).to.equal(4096)
    })
  })
})
