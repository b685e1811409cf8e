/**
 * The status page: a header (the connection's state, the admin token, sign-out), the
 * overview (`#/`) and a job's page (`#/jobs/<id>`). Every time on the page ticks once a
 * second on the cluster's clock.
 * @module
 */
import { Actions, Notices, TokenDialog, adminToken } from './actions.js';
import { h, fill } from './dom.js';
import { JobPage } from './job.js';
import { Overview } from './overview.js';
import { REFRESH_MS } from './pages.js';
import { tick } from './parts.js';
import { api, Store } from './store.js';

const store = new Store();
const notices = new Notices();
const dialog = new TokenDialog();
const actions = new Actions(store, dialog, notices);
const overview = new Overview(store, actions);
let jobPage: JobPage | undefined;

const connection = h('span', { class: 'connection', role: 'status' });
const problem = h('div', { class: 'problem', role: 'alert', hidden: true });
const adminNote = h('div', { class: 'admin-note', hidden: true });
const tokenButtons = h('span', { class: 'token-buttons' });
const signOut = h('form', { method: 'post', action: api('logout'), class: 'sign-out', hidden: true }, h('button', { type: 'submit', class: 'link' }, 'Sign out'));
const main = h('main', { id: 'main', tabindex: '-1' });

function renderTokenButtons(): void {
  const enabled = store.access?.adminEnabled !== false;
  fill(
    tokenButtons,
    !enabled
      ? null
      : adminToken() === null
        ? h('button', { type: 'button', onclick: () => void actions.setToken().then(renderTokenButtons) }, 'Enter admin token')
        : h('button', { type: 'button', onclick: () => (actions.forgetToken(), renderTokenButtons()) }, 'Forget admin token'),
  );
}

function renderConnection(): void {
  const text = store.connection === 'live' ? 'live' : store.connection === 'connecting' ? 'connecting…' : 'reconnecting…';
  connection.textContent = text;
  connection.className = `connection connection-${store.connection}`;
  problem.hidden = store.problem === null;
  problem.textContent = store.problem === null ? '' : `The status cannot be read now: ${store.problem}. What is shown may be out of date.`;
}

function renderAccess(): void {
  const a = store.access;
  adminNote.hidden = !a || a.adminEnabled;
  adminNote.textContent = 'Read-only: no admin token is configured on the server (LEASEHOLD_ADMIN_TOKEN), so pause, resume, run and cancel are refused.';
  signOut.hidden = !a?.readProtected;
  renderTokenButtons();
  overview.refreshActions();
  jobPage?.render();
}

function route(): void {
  const m = /^#\/jobs\/(.+)$/.exec(location.hash);
  const id = m?.[1] === undefined ? undefined : decodeURIComponent(m[1]);
  if (id === undefined) {
    jobPage = undefined;
    fill(main, overview.el);
    document.title = 'leasehold';
  } else {
    jobPage = new JobPage(id, store, actions);
    fill(main, jobPage.el);
    jobPage.render();
    jobPage.load();
    document.title = `${id} · leasehold`;
    main.querySelector<HTMLElement>('.page-title')?.focus();
  }
}

store.on((e) => {
  if (e.kind === 'snapshot') {
    const start = performance.now();
    overview.renderAll();
    performance.measure('leasehold:render', { start, detail: store.jobs.size });
    if (jobPage) {
      jobPage.render();
      jobPage.load();
    }
    performance.mark('leasehold:rendered');
    document.getElementById('app')?.setAttribute('data-state', 'live');
  } else if (e.kind === 'changes') {
    const start = performance.now();
    overview.update(e.ids, e.removed, e.instances, e.executors);
    performance.measure('leasehold:update', { start, detail: e.ids.length });
    if (jobPage && (e.ids.includes(jobPage.id) || e.removed.includes(jobPage.id))) {
      jobPage.render();
      jobPage.load();
    }
  } else if (e.kind === 'connection') {
    renderConnection();
  } else {
    renderAccess();
  }
});

const app = document.getElementById('app') ?? document.body;
fill(
  app,
  // Focuses the content without touching the address (the hash is the page's route).
  h('a', { href: '#main', class: 'skip', onclick: (e: Event) => (e.preventDefault(), main.focus()) }, 'Skip to content'),
  h(
    'header',
    null,
    h('h1', null, h('a', { href: '#/' }, 'leasehold')),
    connection,
    h('span', { class: 'spacer' }),
    tokenButtons,
    signOut,
  ),
  problem,
  adminNote,
  notices.el,
  main,
  dialog.el,
);
app.setAttribute('data-state', 'connecting');
renderConnection();
renderTokenButtons();
window.addEventListener('hashchange', route);
route();
store.start();
window.setInterval(() => tick(main, store.now(), store.paged && !jobPage ? overview.offScreen() : undefined), 1_000);
// A large installation's stream sends no job: a job's page reads its job again instead.
window.setInterval(() => {
  if (store.paged && jobPage && document.visibilityState !== 'hidden') jobPage.load();
}, REFRESH_MS);
