export * from './request-access'
