// The transcript of a session: user and assistant messages (assistant text streams in from the live
// stream's deltas and is replaced by the recorded message), tool calls with their results collapsed
// in <details>, command replies, refusals, model errors and stops. Text always goes in as text.
import { h, time } from './dom.js'

/** Longest JSON shown for a tool's arguments or result (the full value stays in the log). */
const SHOWN_MAX = 4000

function json(value) {
  const text = JSON.stringify(value ?? null, null, 2)
  return text.length > SHOWN_MAX ? `${text.slice(0, SHOWN_MAX)}\n… (${text.length - SHOWN_MAX} more characters in the log)` : text
}

/** A coded refusal's `details` (plugins put what the user needs to act on there), as JSON; nothing without. */
function refusalDetails(error) {
  const details = error?.details
  if (!details || typeof details !== 'object' || !Object.keys(details).length) return []
  return [h('pre', { class: 'refusal-details', 'aria-label': `Details of ${error.code}` }, json(details))]
}

const ORIGIN_LABELS = { user: 'You', controller: 'Controller' }

/**
 * Events after which no streamed text of the step is coming: its recorded message, or a step that
 * ended without one (stopped, refused, failed) — its partial text must not stay or run into the next.
 */
const ENDS_STREAM = new Set(['assistant/message', 'agent/cancelled', 'agent/error', 'agent/refused'])

export class Transcript {
  constructor() {
    this.list = h('div', { id: 'transcript', class: 'transcript', role: 'log', 'aria-label': 'Transcript', tabindex: '0' })
    this.empty = h('p', { class: 'muted transcript-empty' }, 'Nothing said yet: type a message or a command below.')
    this.list.append(this.empty)
    this.calls = new Map()
    this.streaming = undefined
    /** The highest seq shown. */
    this.lastSeq = -1
  }

  /** Append a recorded event (in seq order; older or repeated seqs are ignored). */
  add(event) {
    if (event.seq <= this.lastSeq) return false
    this.lastSeq = event.seq
    const item = this.render(event)
    if (!item) return true
    this.empty.remove()
    if (ENDS_STREAM.has(event.type)) this.endStream()
    const stick = this.atBottom()
    this.list.append(item)
    if (this.streaming) this.list.append(this.streaming)
    if (stick) this.list.scrollTop = this.list.scrollHeight
    return true
  }

  /** Streamed assistant text before its step is recorded. */
  delta(text) {
    this.empty.remove()
    if (!this.streaming) {
      this.streaming = h('div', { class: 'msg assistant streaming', 'data-streaming': 'true' },
        h('p', { class: 'who' }, 'Assistant ', h('span', { class: 'muted' }, '(writing…)')), h('p', { class: 'text' }))
      this.list.append(this.streaming)
    }
    const stick = this.atBottom()
    this.streaming.querySelector('.text').append(text)
    if (stick) this.list.scrollTop = this.list.scrollHeight
  }

  endStream() {
    this.streaming?.remove()
    this.streaming = undefined
  }

  atBottom() {
    return this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 40
  }

  render(event) {
    const data = event.data ?? {}
    const at = { 'data-seq': event.seq, 'data-type': event.type, title: `seq ${event.seq} · ${time(event.time)}` }
    switch (event.type) {
      case 'user/message': {
        const origin = data.origin ?? 'user'
        return h('div', { ...at, class: ['msg', origin === 'user' ? 'user' : 'controller'], 'data-origin': origin },
          h('p', { class: 'who' }, ORIGIN_LABELS[origin] ?? origin), h('p', { class: 'text' }, String(data.text ?? '')))
      }
      case 'assistant/message':
        return h('div', { ...at, class: 'msg assistant' }, h('p', { class: 'who' }, 'Assistant'), h('p', { class: 'text' }, String(data.text ?? '')))
      case 'tool/call': {
        const status = h('span', { class: 'tool-status', 'data-status': 'running' }, 'running…')
        const details = h('details', { ...at, class: 'tool', 'data-call-id': data.callId, 'data-tool': data.name },
          h('summary', {}, 'Tool ', h('code', {}, String(data.name)), ' — ', status),
          h('p', { class: 'muted' }, 'Arguments'), h('pre', {}, json(data.args)))
        this.calls.set(data.callId, { details, status })
        return details
      }
      case 'tool/result': {
        const call = this.calls.get(data.callId)
        const body = data.error
          ? [h('p', { class: 'refusal-inline' }, h('strong', {}, data.error.code), ': ', String(data.error.message ?? '')), ...refusalDetails(data.error)]
          : [h('p', { class: 'muted' }, 'Result'), h('pre', {}, json(data.result))]
        if (call) {
          call.status.textContent = data.error ? `error ${data.error.code}` : 'ok'
          call.status.dataset.status = data.error ? 'error' : 'ok'
          call.details.dataset.code = data.error?.code ?? ''
          call.details.append(...body)
          return null
        }
        return h('details', { ...at, class: 'tool', 'data-call-id': data.callId, 'data-tool': data.name, 'data-code': data.error?.code ?? '' },
          h('summary', {}, 'Tool ', h('code', {}, String(data.name)), ' — ',
            h('span', { class: 'tool-status', 'data-status': data.error ? 'error' : 'ok' }, data.error ? `error ${data.error.code}` : 'ok')), ...body)
      }
      case 'command/reply': {
        if (data.error) {
          return h('div', { ...at, class: 'msg refusal', 'data-code': data.error.code },
            h('p', { class: 'who' }, `/${data.command} refused: `, h('strong', {}, data.error.code)), h('p', { class: 'text' }, data.error.message),
            ...refusalDetails(data.error))
        }
        const reply = data.reply
        const text = typeof reply?.message === 'string' ? reply.message : json(reply)
        return h('div', { ...at, class: 'msg reply' }, h('p', { class: 'who' }, `/${data.command}`), h(typeof reply?.message === 'string' ? 'p' : 'pre', { class: 'text' }, text))
      }
      case 'agent/refused':
        return h('div', { ...at, class: 'msg refusal', 'data-code': data.code },
          h('p', { class: 'who' }, 'Step refused: ', h('strong', {}, data.code)), h('p', { class: 'text' }, String(data.message ?? '')))
      case 'agent/error':
        return h('div', { ...at, class: 'msg refusal model-error', 'data-code': data.code },
          h('p', { class: 'who' }, 'Model error: ', h('strong', {}, data.code)), h('p', { class: 'text' }, String(data.message ?? '')))
      case 'model/warning':
        return h('div', { ...at, class: 'msg note model-warning', 'data-code': data.code },
          h('p', { class: 'who' }, 'Model warning: ', h('strong', {}, String(data.code ?? ''))), h('p', { class: 'text' }, String(data.message ?? '')))
      case 'agent/cancelled':
        return h('div', { ...at, class: 'msg note' },
          h('p', { class: 'text' }, `Stopped by the operator${data.running ? '' : ' (no turn was running)'}; ${data.dropped} queued turn${data.dropped === 1 ? '' : 's'} dropped.`))
      default:
        return null
    }
  }
}
