/** A duplicate `(sessionId, seq)`: an error whose `code` is `duplicate-entry`, like minato's. */
export const duplicate = (error: any) => {
  const wrapped: any = new Error(String(error?.message ?? error))
  wrapped.code = 'duplicate-entry'
  return wrapped
}
