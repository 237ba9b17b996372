/*
 * One Lighthouse run through its Node API, in a plain Node process: under the tests' tsx loader,
 * Lighthouse's page functions are compiled with esbuild's name helper (`__name`) and then fail in the
 * page they are sent to. Reads {url, port, config} as JSON from stdin (not argv: the config holds the
 * operator token); writes the report (LHR) as JSON to stdout.
 */
import lighthouse from 'lighthouse'

let input = ''
for await (const chunk of process.stdin) input += chunk
const { url, port, config } = JSON.parse(input)
const result = await lighthouse(url, { port, logLevel: 'error' }, config)
if (!result) throw new Error(`Lighthouse returned no result for ${url}`)
process.stdout.write(JSON.stringify(result.lhr))
