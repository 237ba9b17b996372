// The operator's controls on the session page: the transcript (fed by the live stream), token usage,
// the queue of turns waiting to run (each removable), the input box for chat and slash commands and
// the Stop button. Built once per page and kept across re-renders of the task view.
import { h, getJson, requestJson } from './dom.js'
import { Transcript } from './transcript.js'

/** What the input box accepts, shown under it. `/task` subcommands are the supervisor's. */
const TASK_HELP = ['/task new <objective>', '/task approve', '/task pause', '/task resume', '/task edit <objective>',
  '/task checks [JSON array]', '/task clear', '/task off', '/task on', '/task status']

export class Operate {
  constructor(sessionId, { commands = [] } = {}) {
    this.sessionId = sessionId
    this.base = `/api/sessions/${encodeURIComponent(sessionId)}`
    this.transcript = new Transcript()
    this.usage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0, steps: 0 }
    this.usageAsOf = 0
    this.usageLine = h('p', { id: 'usage', class: 'usage muted' })
    this.queueList = h('ol', { id: 'queue-list', class: 'queue-list' })
    this.queueBox = h('div', { id: 'queue', class: 'queue', hidden: true },
      h('h3', { id: 'queue-title' }, 'Queued turns'),
      h('p', { class: 'muted queue-note' }),
      this.queueList)
    this.status = h('div', { id: 'input-status', class: 'form-status', role: 'status', 'aria-live': 'polite' })
    this.text = h('textarea', { id: 'input-text', name: 'text', rows: 3, required: true, maxlength: 100000, 'aria-describedby': 'input-help', 'data-keep': 'input-text' })
    this.stop = h('button', { type: 'button', id: 'stop', onclick: () => this.cancel() }, 'Stop')
    const others = commands.filter((name) => name !== 'task').map((name) => `/${name}`)
    this.form = h('form', { id: 'input-form', class: 'input-form', 'aria-labelledby': 'input-label' },
      h('label', { id: 'input-label', for: 'input-text' }, 'Message or command'),
      this.text,
      h('p', { id: 'input-help', class: 'muted help' },
        'Chat text becomes the agent\'s next turn (it waits while a turn runs or a review is pending). Commands: ',
        [...TASK_HELP, ...others].map((cmd, i) => [i ? ', ' : '', h('code', {}, cmd)]), '. Ctrl+Enter sends.'),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', id: 'send' }, 'Send'), this.stop),
      this.status)
    this.form.addEventListener('submit', (event) => {
      event.preventDefault()
      this.send(this.text.value)
    })
    this.text.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault()
        this.form.requestSubmit()
      }
    })
    this.element = h('section', { id: 'conversation', 'aria-labelledby': 'conversation-title' },
      h('h2', { id: 'conversation-title' }, 'Conversation'),
      this.usageLine, this.transcript.list, this.queueBox, this.form)
    this.renderUsage()
  }

  /** Load the recent transcript, usage and queue. */
  async load() {
    const info = await getJson(this.base)
    this.usage = { cachedTokens: 0, ...info.usage }
    this.usageAsOf = info.session.seq
    this.renderUsage()
    await this.fill(Math.max(0, info.session.seq - 1000))
    this.renderQueue(await getJson(`${this.base}/queue`))
  }

  /** Read the log from `from` on (after a reconnect or a gap) and append what is new. */
  async fill(from = this.transcript.lastSeq + 1) {
    let next = from
    for (let page = 0; page < 20 && next !== undefined; page++) {
      const body = await getJson(`${this.base}/events?from=${next}&limit=500`)
      for (const event of body.events) this.addEvent(event)
      next = body.next
    }
  }

  /** An event from the live stream: appended in order, a gap or a truncated event read from the log. */
  onEvent(event) {
    if (event.truncated || event.seq > this.transcript.lastSeq + 1) {
      this.fill().catch(() => {})
      return
    }
    this.addEvent(event)
  }

  addEvent(event) {
    if (!this.transcript.add(event)) return
    if (event.type === 'model/usage' && event.seq >= this.usageAsOf) {
      this.usage.steps += 1
      this.usage.promptTokens += Number(event.data?.promptTokens) || 0
      this.usage.completionTokens += Number(event.data?.completionTokens) || 0
      this.usage.cachedTokens += Number(event.data?.cachedTokens) || 0
      this.renderUsage()
    }
  }

  renderUsage() {
    const { promptTokens, completionTokens, cachedTokens, steps } = this.usage
    // Cached: the prompt tokens the endpoint served from its prompt cache (billed for less).
    const cached = cachedTokens ? `, of the prompt ${cachedTokens} cached` : ''
    this.usageLine.textContent = steps
      ? `Tokens used in this session: ${promptTokens + completionTokens} (prompt ${promptTokens}, completion ${completionTokens}${cached}) over ${steps} model step${steps === 1 ? '' : 's'}.`
      : 'No token usage reported yet.'
    this.usageLine.dataset.total = String(promptTokens + completionTokens)
    this.usageLine.dataset.cached = String(cachedTokens)
  }

  renderQueue({ state, held, items }) {
    this.stop.disabled = state !== 'running' && !items.length
    this.queueBox.hidden = !items.length
    this.queueBox.querySelector('.queue-note').textContent = held
      ? 'Held: a review of the task is pending; these run after its verdict, in this order.'
      : state === 'running' ? 'They run after the current turn, in this order.' : 'They run next, in this order.'
    this.queueList.replaceChildren(...items.map((item) => h('li', { 'data-turn-id': item.id, 'data-origin': item.origin },
      h('span', { class: 'queued-text' }, item.origin === 'user' ? '' : `(${item.origin}) `, item.text),
      ' ',
      h('button', { type: 'button', class: 'small', 'aria-label': `Remove queued turn: ${item.text.slice(0, 60)}`, onclick: () => this.remove(item.id) }, 'Remove'))))
  }

  async refreshQueue() {
    this.renderQueue(await getJson(`${this.base}/queue`))
  }

  say(text, { refusal = false, code } = {}) {
    this.status.replaceChildren(text ? h('p', { class: refusal ? 'refusal' : 'success', 'data-code': code ?? '' }, text) : '')
  }

  /**
   * Send `text`; `fromBox` clears the input box once the host took it (a button's command leaves the
   * draft alone) — unless the user typed the next message meanwhile: that draft is theirs, never cleared.
   */
  async send(text, { fromBox = true } = {}) {
    if (!text.trim()) return this.say('Type a message or a command first.', { refusal: true })
    this.say('Sending…')
    const { ok, status, body } = await requestJson('POST', `${this.base}/input`, { text })
    if (status === 0) return this.say(body.error, { refusal: true, code: body.code })
    const clearSent = () => { if (fromBox && this.text.value === text) this.text.value = '' }
    if (body.kind === 'queued') {
      clearSent()
      this.say(body.running || body.held || body.position > 0
        ? `Queued as turn ${body.position + 1} in line${body.held ? ' (held until the pending review ends)' : ''}.`
        : 'Sent: the agent is working on it.')
      return this.refreshQueue().catch(() => {})
    }
    if (body.kind === 'command') {
      if (ok) clearSent()
      const reply = body.reply
      if (reply?.error) return this.say(`/${reply.command} refused (${reply.error.code}): ${reply.error.message}`, { refusal: true, code: reply.error.code })
      return this.say(`/${reply.command}: ${typeof reply.reply?.message === 'string' ? reply.reply.message : 'done.'}`)
    }
    this.say(`Refused (${body.code}): ${body.error}`, { refusal: true, code: body.code })
  }

  /** Run a command from a button (e.g. Approve plan) and report it in the status region. */
  command(text) {
    return this.send(text, { fromBox: false })
  }

  async cancel() {
    const { ok, body } = await requestJson('POST', `${this.base}/cancel`, {})
    if (!ok) return this.say(`Refused (${body.code}): ${body.error}`, { refusal: true, code: body.code })
    this.say(body.cancelled || body.dropped.length
      ? `Stopped${body.cancelled ? ' the running turn' : ''}; ${body.dropped.length} queued turn${body.dropped.length === 1 ? '' : 's'} dropped.`
      : 'Nothing was running.')
    await this.refreshQueue().catch(() => {})
  }

  async remove(id) {
    const { ok, body } = await requestJson('DELETE', `${this.base}/queue/${encodeURIComponent(id)}`)
    this.say(ok ? `Removed: ${body.removed.text.slice(0, 80)}` : `Not removed (${body.code}): ${body.error}`, { refusal: !ok, code: body.code })
    await this.refreshQueue().catch(() => {})
  }
}
