import { expect } from 'chai'
import { busyMsOfStat } from '../benchmarks/machine-cpu'

describe('benchmarks: machine CPU from /proc/stat', () => {
  it('counts what the machine\'s processes ran (user, nice, system, irq, softirq), not idle, iowait or steal', () => {
    // cpu user nice system idle iowait irq softirq steal guest guest_nice, in ticks of 10 ms.
    // Steal is time the hypervisor gave to other machines while this one waited: nothing here ran,
    // and counting it would make a step look dearer the busier the neighbours are. Guest time is
    // already inside user and nice.
    const stat = 'cpu  100 5 50 1000 20 3 7 40 30 0\ncpu0 50 2 25 500 10 1 3 20 15 0\n'
    expect(busyMsOfStat(stat)).to.equal((100 + 5 + 50 + 3 + 7) * 10)
  })
})
