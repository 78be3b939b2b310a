'use strict'

// The JS article's snowflake class, transcribed: 1 sign / 41 ms timestamp / 3 datacenter / 5 worker / 2 clock-back
// / 12 sequence bits, epoch 1580486400000. Three things differ from the original, each a bug of it:
// - it read `process.env.workerId` for both ids; the datacenter id now reads `datacenterId`;
// - it threw an undefined `ForbiddenException`; it now throws an `Error`;
// - it logged a step back of the clock with `logger.warn(...)`, where `logger` is `console.log`, a function with no
//   `warn`: that line threw a `TypeError` on every call while the clock was behind, so the clock-back handling never
//   ran as published. The line is left out, and nothing is logged.
// Nothing else changed.
// Ids can be configured here per instance (the original used static fields read from the environment), and so
// can the field widths, which the benchmark widens to measure the per-call cost where 4,096 ids/ms does not bind.

class ArticleSnowflake {
  constructor({
    datacenterId = parseInt(process.env.datacenterId ?? '0', 10),
    workerId = parseInt(process.env.workerId ?? '0', 10),
    datacenterIdBits = 3,
    workerIdBits = 5,
    tsBackBits = 2,
    sequenceBits = 12,
  } = {}) {
    this.initiallyTs = 1580486400000
    this.datacenterIdBits = datacenterIdBits
    this.datacenterId = datacenterId
    this.workerIdBits = workerIdBits
    this.workerId = workerId
    this.tsBackBits = tsBackBits
    this.tsBack = 0
    this.sequenceBits = sequenceBits
    this.sequence = 0
    this.tsBackShift = this.sequenceBits // 12
    this.workIdShift = this.tsBackShift + this.tsBackBits // 14
    this.datacenterIdShift = this.workIdShift + this.workerIdBits // 19
    this.tsShift = this.datacenterIdShift + this.datacenterIdBits // 22
    this.maxTsBack = -1 ^ (-1 << this.tsBackBits)
    this.maxSequence = -1 ^ (-1 << this.sequenceBits)
    // biome-ignore lint/complexity/useDateNow: the article's own code, kept as published
    this.lastGenTs = new Date().getTime()
  }

  nextId() {
    let ts = this.getTimestamp()
    if (ts < this.lastGenTs) {
      this.tsBack = (this.tsBack + 1) & this.maxTsBack
      if (this.tsBack === 0) {
        throw new Error('clock moves backwards too many times')
      }
    }
    if (ts === this.lastGenTs) {
      this.sequence = (this.sequence + 1) & this.maxSequence
      if (this.sequence === 0) {
        ts = this.waitNextMillis(this.lastGenTs)
      }
    } else {
      this.sequence = 0
    }
    this.lastGenTs = ts
    return (
      (BigInt(ts - this.initiallyTs) << BigInt(this.tsShift)) |
      BigInt(
        (this.datacenterId << this.datacenterIdShift) |
          (this.workerId << this.workIdShift) |
          (this.tsBack << this.tsBackShift) |
          this.sequence,
      )
    )
  }

  getTimestamp() {
    // biome-ignore lint/complexity/useDateNow: the article's own code, kept as published
    return new Date().getTime()
  }

  waitNextMillis(lastTs) {
    let tempTs = this.getTimestamp()
    while (tempTs <= lastTs) {
      tempTs = this.getTimestamp()
    }
    return tempTs
  }
}

/** The article's packing formula on its own, for fields chosen by a test. */
function articleFormula({ timestamp, datacenterId, workerId, clockBack, sequence }) {
  return (
    (BigInt(timestamp - 1580486400000) << 22n) |
    BigInt((datacenterId << 19) | (workerId << 14) | (clockBack << 12) | sequence)
  )
}

module.exports = { ArticleSnowflake, articleFormula }
