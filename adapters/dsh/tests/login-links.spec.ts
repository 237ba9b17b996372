import { expect } from 'chai'
import { LoginTickets } from '../src/login-links'

/** The one-time tickets behind `/task console` links (the real-DSH flow is tests/dsh/console.spec.ts). */
describe('DSH adapter: one-time login tickets', () => {
  it('redeems a ticket once, to its target; a second use, an unknown or an expired ticket opens nothing', () => {
    let now = 1_000
    const tickets = new LoginTickets(() => now)
    const ticket = tickets.issue('/taskward/sessions/s1#impact', 60_000)
    expect(ticket).to.match(/^[\w-]{43}$/)
    expect(tickets.redeem(ticket)).to.equal('/taskward/sessions/s1#impact')
    expect(tickets.redeem(ticket)).to.equal(undefined)
    expect(tickets.redeem('made-up')).to.equal(undefined)
    const late = tickets.issue('/taskward/', 60_000)
    now += 60_000
    expect(tickets.redeem(late)).to.equal(undefined)
  })
})
