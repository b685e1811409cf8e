/**
 * The admin actions (pause, resume, run now, cancel) and the admin token. The token is asked
 * for once and kept in `sessionStorage`: for this tab's session only, never in a URL, a
 * cookie or a log; it is sent only as `Authorization: Bearer` on the action's request.
 * @module
 */
import { h } from './dom.js';
import { api, type Store } from './store.js';
import type { Action } from './types.js';

const TOKEN_KEY = 'leasehold.adminToken';

/** The admin token of this tab's session, or null. */
export function adminToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null; // storage disabled: the token is asked for at each action
  }
}

function keepToken(token: string | null): void {
  try {
    if (token === null) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // storage disabled: nothing is kept
  }
}

const VERBS: Readonly<Record<Action, string>> = { pause: 'Pause', resume: 'Resume', run: 'Run now', cancel: 'Cancel run' };

/** Shows the answer of the last action, as text, in a live region. */
export class Notices {
  readonly el = h('div', { class: 'notice', role: 'status', 'aria-live': 'polite', hidden: true });

  show(text: string, kind: 'ok' | 'error' | 'info'): void {
    this.el.hidden = false;
    this.el.className = `notice notice-${kind}`;
    this.el.replaceChildren(
      h('span', null, text),
      h('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss', onclick: () => (this.el.hidden = true) }, '×'),
    );
  }
}

/** The dialog that asks for the admin token. */
export class TokenDialog {
  private readonly input = h('input', { id: 'admin-token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true });
  readonly el: HTMLDialogElement;
  private resolve: ((token: string | null) => void) | undefined;

  constructor() {
    const form = h(
      'form',
      { method: 'dialog' },
      h('h2', null, 'Admin token'),
      h('p', null, 'Pause, resume, run and cancel need the node\'s admin token (LEASEHOLD_ADMIN_TOKEN). It is kept in this tab until it closes, and sent only with those actions.'),
      h('label', { for: 'admin-token' }, 'Token'),
      this.input,
      h('div', { class: 'dialog-buttons' }, h('button', { type: 'submit', value: 'ok', class: 'primary' }, 'Use this token'), h('button', { type: 'button', onclick: () => this.el.close('cancel') }, 'Cancel')),
    );
    this.el = h('dialog', { 'aria-labelledby': 'admin-token-title' }, form);
    form.querySelector('h2')?.setAttribute('id', 'admin-token-title');
    this.el.addEventListener('close', () => {
      const token = this.el.returnValue === 'ok' ? this.input.value.trim() : '';
      this.input.value = '';
      this.resolve?.(token === '' ? null : token);
      this.resolve = undefined;
    });
  }

  /** Asks; resolves with the token, or null when cancelled. */
  ask(): Promise<string | null> {
    this.el.returnValue = '';
    this.el.showModal();
    return new Promise((resolve) => (this.resolve = resolve));
  }
}

/** Runs the actions of the page's buttons. */
export class Actions {
  constructor(
    private readonly store: Store,
    private readonly dialog: TokenDialog,
    private readonly notices: Notices,
  ) {}

  /** A button for `action` on `jobId`; `data-action` names the action. */
  button(jobId: string, action: Action): HTMLButtonElement {
    const disabled = this.store.access?.adminEnabled === false;
    return h(
      'button',
      {
        type: 'button',
        class: `action action-${action}`,
        'data-action': action,
        'aria-label': `${VERBS[action]}: ${jobId}`,
        title: disabled ? 'Admin actions are disabled: no admin token is configured on the server' : `${VERBS[action]} ${jobId}`,
        'aria-disabled': disabled ? 'true' : null,
        onclick: (e: Event) => void this.act(jobId, action, e.currentTarget as HTMLButtonElement),
      },
      VERBS[action],
    );
  }

  /** Asks for a new token (the header's button). */
  async setToken(): Promise<void> {
    const token = await this.dialog.ask();
    if (token !== null) {
      keepToken(token);
      this.notices.show('Admin token kept for this tab.', 'info');
    }
  }

  forgetToken(): void {
    keepToken(null);
    this.notices.show('Admin token forgotten.', 'info');
  }

  async act(jobId: string, action: Action, button?: HTMLButtonElement): Promise<void> {
    if (this.store.access?.adminEnabled === false) {
      this.notices.show('Admin actions are disabled on this node: no admin token (LEASEHOLD_ADMIN_TOKEN) is configured on the server.', 'error');
      return;
    }
    let token = adminToken();
    if (token === null) {
      token = await this.dialog.ask();
      if (token === null) return;
      keepToken(token);
    }
    if (button) button.setAttribute('aria-busy', 'true');
    try {
      const res = await fetch(api(`jobs/${encodeURIComponent(jobId)}/${action}`), {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        cache: 'no-store',
      });
      const text = await res.text();
      let message = text.trim() === '' ? res.statusText : text;
      try {
        const body = JSON.parse(text) as Record<string, unknown>;
        message = typeof body['message'] === 'string' ? body['message'] : summary(action, body);
      } catch {
        // not JSON: shown as it came
      }
      if (res.ok) {
        this.notices.show(`${VERBS[action]} ${jobId}: ${message} (${res.status})`, 'ok');
      } else {
        if (res.status === 401 || (res.status === 403 && !/disabled/.test(message))) {
          keepToken(null);
          message += ' The token was forgotten: enter it again at the next action.';
        }
        this.notices.show(`${VERBS[action]} ${jobId} refused: ${message} (${res.status})`, 'error');
      }
    } catch (err) {
      this.notices.show(`${VERBS[action]} ${jobId} failed: ${err instanceof Error ? err.message : String(err)}`, 'error');
    } finally {
      button?.removeAttribute('aria-busy');
    }
  }
}

function summary(action: Action, body: Record<string, unknown>): string {
  if (action === 'pause' || action === 'resume') return body['paused'] === true ? 'paused on every node' : body['paused'] === false ? 'resumed on every node' : 'done';
  if (action === 'run') return 'started';
  return 'done';
}
