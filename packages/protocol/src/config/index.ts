export * from './strict'
