/**
 * The console's stylesheet. Colours meet WCAG 2.2 AA contrast on their backgrounds (text 4.5:1 or
 * more, e.g. #4a5562 on white 7.4:1, links #0b57d0 6.6:1, white on #0b57d0 6.6:1, #a4211a on
 * #fdecea 6.5:1); focus is always visible. Table cells hold one line each (ellipsis beyond, the text
 * itself kept for copying), hints beside their value, so rows stay compact; fixed tables give
 * columns the widths their <col> classes name. Below 760 px the navigation becomes a wrapping row,
 * fact lists stack label over value, table rows stack their cells each under its column's label
 * (data-label, set by DataTable), and day charts scroll inside their own region (a chart keeps a
 * width at which its axis labels stay legible, and starts scrolled to its newest day).
 */
export const CONSOLE_CSS = `
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;background:#f6f7f9}
a{color:#0b57d0}
a:hover{text-decoration-thickness:2px}
:focus-visible{outline:3px solid #0b57d0;outline-offset:2px}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;margin:-1px}
.error-text{color:#a4211a}
.skip{position:absolute;left:-9999px;top:0;background:#fff;padding:.5rem 1rem;z-index:10}
.skip:focus{left:.5rem}
header.top{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1rem;padding:.6rem 1.25rem;background:#14213d;color:#fff}
header.top a{color:#fff}
.brand{font-weight:700;text-decoration:none;font-size:1.05rem;margin-right:auto}
.workspace{font-size:.9rem;color:#dfe6f3}
header.top form{margin:0}
header.top button{background:transparent;color:#fff;border:1px solid #9fb0cf}
header.top button:hover{background:#23345a}
.mode-switch{display:flex;gap:.25rem;align-items:center}
.mode-switch button[aria-pressed=true]{background:#fff;color:#14213d;border-color:#fff;font-weight:600}
.shell{display:flex;min-height:calc(100vh - 52px)}
nav.side{flex:0 0 11.5rem;background:#fff;border-right:1px solid #d8dde4;padding:1rem 0}
nav.side ul{list-style:none;margin:0;padding:0}
nav.side a{display:block;padding:.45rem 1.25rem;color:#1b1f24;text-decoration:none}
nav.side a:hover{background:#eef2f8}
nav.side a[aria-current=page]{background:#e3ecfb;color:#0b3d91;font-weight:600;border-left:4px solid #0b57d0;padding-left:calc(1.25rem - 4px)}
main{flex:1;min-width:0;padding:1.5rem 1.5rem 3rem;max-width:80rem}
h1{font-size:1.55rem;margin:0 0 1rem}
h2{font-size:1.15rem;margin:2rem 0 .75rem}
p.lead{color:#4a5562;margin-top:-.5rem}
.muted{color:#4a5562}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(14rem,1fr));gap:1rem}
.card{background:#fff;border:1px solid #d8dde4;border-radius:8px;padding:1rem 1.1rem}
.card h2,.card h3{margin:0 0 .35rem;font-size:.95rem;color:#4a5562;font-weight:600}
.card .big{font-size:1.6rem;font-weight:650;margin:0}
.card .big .muted{font-size:.9rem;font-weight:400}
.panel>h2:first-child,.panel>figcaption:first-child{margin-top:0}
button.small{white-space:nowrap}
td code{white-space:nowrap}
.attributes{display:flex;flex-wrap:wrap;gap:.2rem .4rem}
td .attributes code{white-space:normal;overflow-wrap:anywhere}
.panel{background:#fff;border:1px solid #d8dde4;border-radius:8px;padding:1rem 1.25rem;margin-bottom:1.25rem}
.table-wrap{position:relative;overflow-x:auto;background:#fff;border:1px solid #d8dde4;border-radius:8px;margin-bottom:1.25rem}
table{border-collapse:collapse;width:100%;font-size:.92rem}
table.fixed{table-layout:fixed}
.w-4{width:4rem}.w-5{width:5rem}.w-6{width:6rem}.w-7{width:7rem}.w-8{width:8rem}.w-9{width:9rem}.w-10{width:10rem}.w-11{width:11rem}.w-12{width:12rem}.w-14{width:14rem}.w-16{width:16rem}.w-18{width:18rem}
td{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;max-width:24rem}
table.fixed td{max-width:none}
td .hint{display:inline;margin-left:.4rem}
td select{font-size:.85rem;padding:.15rem .2rem;width:auto;max-width:7rem}
td .actions{gap:.3rem}
td .actions{flex-wrap:nowrap}
td details>summary{cursor:pointer;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
td details[open]{white-space:normal}
td details[open]>summary{white-space:normal}
td details[open] .attributes{margin-top:.3rem}
td dl.facts{margin:.4rem 0 .2rem;font-size:.88rem}
.pager{display:flex;gap:1.25rem;margin:0 0 1.25rem}
td.clip-start{direction:rtl;text-align:left}
td.clip-start>*{direction:ltr;unicode-bidi:isolate}
caption{text-align:left;padding:.5rem .75rem;caption-side:top}
.nowrap{white-space:nowrap}
.mode-label{font-size:.9rem;color:#dfe6f3}
th,td{text-align:left;padding:.5rem .65rem;border-bottom:1px solid #e6e9ee;vertical-align:top}
th{background:#f0f2f5;font-weight:600;white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr:last-child td{border-bottom:0}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.86rem;overflow-wrap:anywhere}
form.inline{display:inline}
.form-actions{margin:1rem 0 0}
.form-grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(15rem,1fr));gap:.9rem 1.25rem;align-items:start}
label{display:block;font-weight:600;margin-bottom:.25rem}
.field{margin-bottom:.9rem}
.hint{display:block;font-weight:400;color:#4a5562;font-size:.85rem}
input[type=text],input[type=email],input[type=password],input[type=number],input[type=date],input[type=datetime-local],select,textarea{width:100%;font:inherit;padding:.45rem .55rem;border:1px solid #8a94a3;border-radius:6px;background:#fff;color:#1b1f24}
textarea{min-height:4.5rem}
fieldset{border:1px solid #d8dde4;border-radius:8px;padding:.75rem 1rem;margin:0 0 1rem}
legend{font-weight:600;padding:0 .35rem}
.choices label{display:inline-flex;gap:.35rem;align-items:center;font-weight:400;margin-right:1rem}
button,.button{display:inline-block;font:inherit;font-weight:600;padding:.45rem .9rem;border-radius:6px;border:1px solid #0b57d0;background:#0b57d0;color:#fff;cursor:pointer;text-decoration:none}
button:hover,.button:hover{background:#0a4ab1}
button.secondary,.button.secondary{background:#fff;color:#0b57d0}
button.secondary:hover{background:#eef2f8}
button.danger{background:#a4211a;border-color:#a4211a}
button.danger:hover{background:#861a14}
button.small{padding:.2rem .55rem;font-size:.85rem}
button[disabled]{opacity:.6;cursor:not-allowed}
.actions{display:flex;flex-wrap:wrap;gap:.4rem}
.notice{border-radius:8px;padding:.75rem 1rem;margin:0 0 1.25rem;border:1px solid}
.notice.ok{background:#e7f5ec;border-color:#8fcaa3;color:#14532d}
.notice.error{background:#fdecea;border-color:#f1a7a0;color:#a4211a}
.notice.warn{background:#fff4e0;border-color:#e7b766;color:#6b4500}
.notice h2{margin:0 0 .35rem;font-size:1rem}
.secret{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;background:#fff;border:1px dashed #8a94a3;border-radius:6px;padding:.5rem .75rem}
.secret code{font-size:.95rem}
.badge{display:inline-block;border-radius:999px;padding:.05rem .55rem;font-size:.8rem;font-weight:600;border:1px solid;white-space:nowrap}
.badge.active,.badge.allowed,.badge.logged-ok{background:#e7f5ec;color:#14532d;border-color:#8fcaa3}
.badge.expiring,.badge.logged,.badge.audit{background:#fff4e0;color:#6b4500;border-color:#e7b766}
.badge.revoked,.badge.expired,.badge.blocked,.badge.enforce{background:#fdecea;color:#a4211a;border-color:#f1a7a0}
.badge.status-2xx{background:#e7f5ec;color:#14532d;border-color:#8fcaa3}
.badge.status-4xx{background:#fff4e0;color:#6b4500;border-color:#e7b766}
.badge.status-5xx{background:#fdecea;color:#a4211a;border-color:#f1a7a0}
.badge.test{background:#eef0ff;color:#3730a3;border-color:#b8bdf5}
.badge.live{background:#e3ecfb;color:#0b3d91;border-color:#9db8ec}
.verify-result{display:block;margin-top:.35rem;font-size:.88rem;overflow-wrap:anywhere;white-space:normal}
.verify-result:empty{display:none}
.verify-result.ok{color:#14532d}
.verify-result.bad{color:#a4211a}
meter{width:100%;height:1rem}
figure{margin:0 0 1.25rem}
figcaption{margin-bottom:.5rem}
.chart{width:100%;height:auto;display:block}
.chart-scroll{overflow-x:auto;direction:rtl}
.chart-scroll>svg{direction:ltr}
.totals-row{display:grid;grid-template-columns:minmax(6rem,12rem) minmax(0,1fr) 5rem;gap:.75rem;align-items:center;font-size:.9rem;margin:.3rem 0}
.totals-row svg{width:100%;height:1.1rem;display:block}
.totals-name{overflow-wrap:anywhere;text-align:right}
.chart text{font:11px system-ui,sans-serif;fill:#4a5562}
.chart .axis{stroke:#8a94a3;stroke-width:1}
.chart .grid{stroke:#e6e9ee;stroke-width:1}
.legend{display:flex;flex-wrap:wrap;gap:.35rem 1rem;list-style:none;padding:0;margin:.5rem 0 0;font-size:.88rem}
.legend svg{vertical-align:-2px;margin-right:.3rem}
.filters{display:flex;flex-wrap:wrap;gap:.75rem;align-items:flex-end;margin-bottom:1rem}
.filters .field{margin:0;min-width:10rem}
dl.facts{display:grid;grid-template-columns:minmax(0,max-content) minmax(0,1fr);gap:.3rem 1rem;margin:0}
dl.facts dt{font-weight:600;color:#4a5562}
dl.facts dd{margin:0;min-width:0;overflow-wrap:anywhere}
.sign-in{max-width:26rem;margin:4rem auto;padding:0 1rem}
.sign-in .panel{padding:1.5rem}
.sign-in h1{text-align:center}
.plan-grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(13rem,1fr));gap:1rem}
.plan-grid .card[aria-current=true]{border:2px solid #0b57d0}
.plan-grid ul{padding-left:1.1rem;margin:.5rem 0}
pre{background:#f0f2f5;border-radius:6px;padding:.75rem;overflow-x:auto;font-size:.85rem}
pre.wrap{white-space:pre-wrap;overflow-wrap:anywhere}
ol.candidates{padding-left:1.5rem}
ol.candidates li.selected{border:2px solid #0b57d0}
ol.candidates p{margin:0 0 .5rem}
@media (max-width:760px){
  .shell{display:block}
  nav.side{border-right:0;border-bottom:1px solid #d8dde4;padding:.25rem .5rem}
  nav.side ul{display:flex;flex-wrap:wrap;gap:.15rem}
  nav.side a{padding:.35rem .6rem;border-radius:6px}
  nav.side a[aria-current=page]{border-left:0;padding-left:.6rem}
  main{padding:1rem .9rem 2rem}
  h1{font-size:1.3rem}
  header.top{padding:.5rem .9rem}
  .workspace{order:3;width:100%}
  .mode-label{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
  header.top button{padding:.35rem .6rem}
  dl.facts{grid-template-columns:minmax(0,1fr);gap:0}
  dl.facts dd{margin-bottom:.6rem}
  .chart-scroll .chart{min-width:40rem}
  .totals-row{grid-template-columns:minmax(0,7rem) minmax(0,1fr) 3.5rem;gap:.5rem}
  .table-wrap table,.table-wrap tbody,.table-wrap tr,.table-wrap td{display:block;width:100%}
  .table-wrap table.fixed{table-layout:auto}
  .table-wrap colgroup{display:none}
  .table-wrap thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
  .table-wrap caption{display:block}
  .table-wrap tr{border-bottom:1px solid #d8dde4;padding:.4rem 0}
  .table-wrap tr:last-child{border-bottom:0}
  .table-wrap td{display:flow-root;border:0;max-width:none;padding:.1rem .75rem .1rem 8.25rem;line-height:1.4;white-space:normal;overflow:visible;overflow-wrap:anywhere}
  .table-wrap td::before{content:attr(data-label);float:left;margin-left:-7.5rem;width:7rem;font-weight:600;color:#4a5562;font-size:.85rem;overflow-wrap:normal}
  .table-wrap td .actions{flex-wrap:wrap}
  .table-wrap td[colspan]{padding-left:.75rem}
  .table-wrap td.num{text-align:left}
  .table-wrap td code{white-space:normal}
  .table-wrap td details>summary{white-space:normal}
}
`
