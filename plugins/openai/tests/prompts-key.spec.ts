import { expect } from 'chai'
import { CONSULTATION_INSTRUCTIONS, instructionsFor, MAIN_INSTRUCTIONS } from '../src/prompts'

/*
 * instructionsFor is memoized by `${role}\0${cwd}`. Both are free strings (ModelRequest.role: string,
 * sessions.cwd: text), so ('main', 'a\0b') and ('main\0a', 'b') share a key: the second is handed the
 * first one's instructions (another role's, another workspace's).
 */
describe('instructionsFor memo key', () => {
  it('gives each role and workspace its own instructions, whatever characters they hold', () => {
    const main = instructionsFor('main', 'a\0b')
    expect(main).to.equal(`${MAIN_INSTRUCTIONS}\n\nWorkspace directory: a\0b`)
    const other = instructionsFor('main\0a', 'b')
    expect(other).to.equal(`${CONSULTATION_INSTRUCTIONS}\n\nWorkspace directory: b`)
  })
})
