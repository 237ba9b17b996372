/*
 * The panel's styles, added once to the page as one tagged <style>. Text takes DSH's own colour
 * (`inherit`), so it reads on DSH's light and dark themes; every chip sets its own text and background
 * pair (contrast ≥ 4.5:1). Nothing here sizes wider than its container: at 375 px the DAG scrolls in
 * its own focusable box and the rest wraps.
 */
export const PANEL_CSS = `
.tw-panel { padding: 12px 16px 24px; max-width: 960px; margin: 0 auto; color: inherit; font: inherit; line-height: 1.45; overflow-wrap: anywhere; box-sizing: border-box; width: 100%; overflow-y: auto; height: 100%; }
.tw-panel * { box-sizing: border-box; }
.tw-title { font-size: 1.1rem; margin: 0 0 8px; }
.tw-live { font-size: .8rem; font-weight: 400; opacity: .8; }
.tw-objective { font-size: 1rem; font-weight: 600; margin: 4px 0 8px; }
.tw-section { border: 1px solid rgba(128,128,128,.45); border-radius: 10px; padding: 10px 12px; margin: 10px 0; }
.tw-section h3 { font-size: .95rem; margin: 0 0 6px; }
.tw-facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 6px 0; }
.tw-facts dt { font-weight: 600; opacity: .85; }
.tw-facts dd { margin: 0; min-width: 0; }
.tw-muted { opacity: .85; }
.tw-note { font-size: .9rem; }
.tw-actions { display: flex; flex-wrap: wrap; gap: 8px; margin: 8px 0; align-items: center; }
.tw-panel button, .tw-dock button { font: inherit; min-height: 36px; padding: 4px 12px; border-radius: 8px; border: 1px solid #6b7280; background: #ffffff; color: #1d2430; cursor: pointer; }
.tw-panel button.tw-primary, .tw-dock button.tw-primary { background: #1747b5; border-color: #1747b5; color: #ffffff; }
.tw-panel button:disabled, .tw-dock button:disabled { opacity: .6; cursor: default; }
.tw-panel button:focus-visible, .tw-dock button:focus-visible, .tw-scroll:focus-visible, .tw-panel textarea:focus-visible { outline: 3px solid #1a56db; outline-offset: 2px; }
.tw-panel textarea { width: 100%; font: inherit; color: #1d2430; background: #ffffff; border: 1px solid #6b7280; border-radius: 6px; padding: 6px; }
.tw-panel label { display: block; margin: 6px 0 4px; }
.tw-panel label.tw-check { display: flex; gap: 6px; align-items: center; }
.tw-panel fieldset { border: 1px solid rgba(128,128,128,.45); border-radius: 6px; margin: 6px 0; }
.tw-phase, .tw-status { padding: 0 6px; border-radius: 4px; background: #eef0f3; color: #1d2430; }
.tw-ph-complete, .tw-st-passed { background: #dcfce7; color: #14532d; }
.tw-ph-active, .tw-st-running { background: #dbeafe; color: #1e3a8a; }
.tw-ph-reviewing, .tw-st-reviewing { background: #ede9fe; color: #4c1d95; }
.tw-ph-paused, .tw-st-needs-revision { background: #ffedd5; color: #7c2d12; }
.tw-ph-awaiting-approval, .tw-st-awaiting-user { background: #fee2e2; color: #7f1d1d; }
.tw-nodes, .tw-reviews, .tw-budgets, .tw-evidence { padding-left: 18px; margin: 6px 0; }
.tw-nodes li p { margin: 2px 0; }
.tw-outcome { border-radius: 8px; padding: 6px 10px; margin: 8px 0; }
.tw-outcome p { margin: 2px 0; }
.tw-refusal { background: #fef2f2; color: #7f1d1d; border: 1px solid #dc2626; }
.tw-success { background: #ecfdf3; color: #14532d; border: 1px solid #34a853; }
.tw-impact { border-color: #b45309; border-width: 2px; }
.tw-scroll { overflow-x: auto; max-width: 100%; }
.tw-dag { display: block; max-width: none; margin: 6px 0; }
.tw-dag .tw-edge { fill: none; stroke: #8a93a3; stroke-width: 1.5; }
.tw-dag .tw-edge-hot { stroke: #b45309; stroke-width: 2.5; }
.tw-dag .tw-arrow { fill: #8a93a3; }
.tw-dag .tw-node rect { fill: #eef0f3; stroke: #8a93a3; stroke-width: 1.2; }
.tw-dag .tw-node text { font-size: 12px; fill: #1d2430; }
.tw-dag .tw-node .tw-node-id { font-weight: 700; }
.tw-dag .tw-node .tw-node-meta { font-size: 11px; fill: #374151; }
.tw-dag .tw-st-passed rect { fill: #dcfce7; } .tw-dag .tw-st-running rect { fill: #dbeafe; } .tw-dag .tw-st-reviewing rect { fill: #ede9fe; }
.tw-dag .tw-st-needs-revision rect { fill: #ffedd5; } .tw-dag .tw-st-awaiting-user rect { fill: #fee2e2; }
.tw-dag .tw-affected rect { stroke: #b45309; stroke-width: 3; }
.tw-dock { background: Canvas; display: flex; flex-wrap: wrap; gap: 6px 10px; align-items: center; padding: 6px 10px; border: 1px solid rgba(128,128,128,.45); border-radius: 10px; margin: 4px 0; font-size: .9rem; }
@media (max-width: 560px) { .tw-facts { grid-template-columns: 1fr; gap: 0; } .tw-facts dd { margin-bottom: 6px; } .tw-panel { padding: 8px 10px 24px; } }
.tw-card { margin: 6px auto; max-width: 720px; padding: 6px 10px; border-left: 4px solid #1747b5; border-radius: 6px; font-size: .9rem; background: rgba(128,128,128,.08); }
`
