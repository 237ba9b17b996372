/** An HTTP client for a test host: sends the token and a same-origin Origin header unless told not to. */
export class HttpClient {
  constructor(public baseUrl: string, public token?: string) {}

  fetch(path: string, init: RequestInit & { token?: string | null, origin?: string | null } = {}) {
    const headers = new Headers(init.headers)
    const token = init.token === undefined ? this.token : init.token
    if (token && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`)
    const origin = init.origin === undefined ? this.baseUrl : init.origin
    if (origin && !headers.has('origin')) headers.set('origin', origin)
    if (init.body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json')
    return fetch(this.baseUrl + path, { ...init, headers, redirect: 'manual' })
  }

  /** POST a JSON value (or a raw string). */
  post(path: string, body: unknown, init: RequestInit & { token?: string | null, origin?: string | null } = {}) {
    return this.fetch(path, { ...init, method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body) })
  }

  async json<T = any>(path: string, init?: RequestInit & { token?: string | null, origin?: string | null }): Promise<{ status: number, body: T }> {
    const response = await this.fetch(path, init)
    return { status: response.status, body: await response.json() as T }
  }
}
