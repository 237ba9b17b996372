import { createConnection, createServer, type Server, type Socket } from 'node:net'

/**
 * How one proxied connection's bytes flow; the default pipes both ways. A test that must cut a
 * connection at a precise point (after a statement reached the server, before its answer) relays itself.
 */
export type Relay = (client: Socket, upstream: Socket) => void

const pipeBoth: Relay = (client, upstream) => { client.pipe(upstream).pipe(client) }

/**
 * A TCP proxy in front of a real server (MariaDB in the store-outage suites): `down()` cuts every
 * connection and refuses new ones, `up()` serves again on the same port — an outage without stopping a
 * server other suites share.
 */
export class TcpProxy {
  server?: Server
  readonly sockets = new Set<Socket>()
  /** The local ports of the proxy's connections to the server (MariaDB lists them as the client's HOST). */
  readonly upstreamPorts = new Set<number>()

  constructor(readonly port: number, readonly target: { host: string, port: number }, private readonly relay: Relay = pipeBoth) {}

  up() {
    return new Promise<void>((resolve, reject) => {
      this.server = createServer((client) => {
        const upstream = createConnection(this.target)
        upstream.on('connect', () => this.upstreamPorts.add(upstream.localPort!))
        for (const socket of [client, upstream]) {
          this.sockets.add(socket)
          socket.on('close', () => this.sockets.delete(socket))
          socket.on('error', () => {})
        }
        client.on('close', () => upstream.destroy())
        upstream.on('close', () => client.destroy())
        this.relay(client, upstream)
      })
      this.server.once('error', reject)
      this.server.listen(this.port, '127.0.0.1', () => resolve())
    })
  }

  down() {
    for (const socket of this.sockets) socket.destroy()
    return new Promise<void>((resolve) => this.server ? this.server.close(() => resolve()) : resolve())
  }
}
