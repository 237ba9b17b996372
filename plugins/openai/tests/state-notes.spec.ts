import { expect } from 'chai'
import { nextNote, noteMessage, type StateNote } from '../src/state-notes'

describe('task-state notes', () => {
  const first: StateNote = { beforeSeq: 3, state: JSON.stringify({ phase: 'planning', nodes: { a: 'pending', b: 'pending' }, notes: 'x'.repeat(200) }) }
  const second = nextNote(9, JSON.stringify({ phase: 'executing', nodes: { a: 'done', b: 'pending' }, notes: 'x'.repeat(200) }), first)
  const baseOf = (notes: StateNote[]) => (beforeSeq: number) => notes.find((note) => note.beforeSeq === beforeSeq)

  it('shows a later note as a patch on the note it follows, the same message object on every later layout', () => {
    expect(second.base).to.equal(3)
    const message = noteMessage(second, baseOf([first, second]))
    expect(message.content).to.match(/changes since seq 3, a JSON merge patch\]\n/)
    expect(JSON.parse(message.content!.split('\n')[1])).to.deep.equal({ phase: 'executing', nodes: { a: 'done' } })
    // Made once: the text (and its token count, kept by text) is not built again step after step.
    expect(noteMessage(second, baseOf([first, second]))).to.equal(message)
  })

  it('shows the note whole once its base is gone, and as a patch again on a base shown anew — never a message made for another base', () => {
    const patched = noteMessage(second, baseOf([first, second]))
    const whole = noteMessage(second, baseOf([second]))
    expect(whole).to.not.equal(patched)
    expect(whole.content).to.match(/as of seq 9; it holds until a newer one follows\]\n\{"phase":"executing"/)
    // Another note object at the base's seq (the base re-shown): its own text decides, not the kept message.
    const other: StateNote = { beforeSeq: 3, state: JSON.stringify({ phase: 'executing', nodes: { a: 'pending', b: 'pending' }, notes: 'x'.repeat(200) }) }
    const onOther = noteMessage(second, baseOf([other, second]))
    expect(JSON.parse(onOther.content!.split('\n')[1])).to.deep.equal({ nodes: { a: 'done' } })
  })
})
