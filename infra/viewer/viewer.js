// The journal viewer (decision 0016): plain JavaScript over the A2A v1.0 JSON-RPC binding, as the
// caller. It lists the caller's tasks (ListTasks) and shows one task's revision timeline from
// SubscribeToTask with `Last-Event-ID: 1` — the task as of revision 1, then every later revision,
// then live events until it settles (decision 0008). EventSource cannot POST, so the SSE stream is
// read from a streaming fetch. Everything shown is set with textContent, never as HTML.
// Push deliveries (decision 0025) come from the server's push-deliveries extension method
// ListTaskPushDeliveries, refreshed on every revision the stream brings and every few seconds.

const $ = (id) => document.getElementById(id);
const storage = window.sessionStorage;

const state = {
  endpoint: undefined, // the JSON-RPC URL from the agent card
  selected: undefined,
  stream: undefined, // AbortController of the open stream
  listTimer: undefined,
  pushTimer: undefined, // the light poll of the selected task's deliveries
  settledAt: undefined, // when the selected task was seen settled (the poll stops a while later)
  pushRender: 0, // the latest renderPush call: an older answer arriving late is dropped
  pushSoon: undefined, // a renderPush asked for by the stream, coalesced
};

/** How often the deliveries are re-read while a task is open, and for how long after it settled. */
const pushPollMs = 3000;
const pushPollAfterSettledMs = 60_000;

const stateName = (state) => (state ?? 'UNSPECIFIED').replace(/^TASK_STATE_/, '');
const terminal = new Set(['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED']);

const setStatus = (text, error = false) => {
  $('status').textContent = text;
  $('status').className = error ? 'error' : '';
};

const headers = (extra = {}) => {
  const token = $('token').value.trim();
  return {
    'Content-Type': 'application/json',
    'A2A-Version': '1.0',
    ...(token ? { Authorization: `Bearer ${token}` } : {}),
    ...extra,
  };
};

/**
 * The API this page came from: its URL up to `/viewer` (the local stack's origin, or a
 * deployment's `https://.../<stage>`; decision 0026: served from the API's own domain).
 */
const servedFrom = `${window.location.origin}${window.location.pathname.replace(/\/viewer(\/.*)?$/, '')}`;

/** Same rule as `npx a2a --url`: a .json URL is the card, anything else a base URL. */
const cardUrlOf = (url) => {
  const parsed = new URL(url, window.location.href);
  if (!parsed.pathname.endsWith('.json')) {
    parsed.pathname = `${parsed.pathname.replace(/\/+$/, '')}/.well-known/agent-card.json`;
  }
  return parsed.href;
};

class RpcError extends Error {
  constructor(error) {
    super(`${error.message ?? 'error'} (${error.code})`);
    this.code = error.code;
  }
}

let nextId = 1;
const body = (method, params) => JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params });

const rpc = async (method, params) => {
  const response = await fetch(state.endpoint, {
    method: 'POST',
    headers: headers(),
    body: body(method, params),
  });
  if (response.status === 401) throw new Error('401 Unauthorized: check the token');
  const answer = await response.json();
  if (answer.error) throw new RpcError(answer.error);
  return answer.result;
};

// ---- rendering helpers

const el = (tag, attributes = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
};

const stateBadge = (value) => {
  const name = stateName(value);
  return el('span', { class: `state ${name}`, text: name });
};

const partText = (part) => {
  if (typeof part.text === 'string') return part.text;
  if (part.data !== undefined) return JSON.stringify(part.data);
  const label = [part.filename, part.mediaType].filter(Boolean).join(', ');
  return `[file${label ? ` ${label}` : ''}${part.url ? ` ${part.url}` : ''}]`;
};
const partsText = (parts) => (parts ?? []).map(partText).join(' ');
const roleName = (role) => (role ?? '').replace(/^ROLE_/, '').toLowerCase();
const time = (timestamp) => (timestamp ? new Date(timestamp).toLocaleTimeString() : '');

// ---- the task list

const renderTasks = (tasks) => {
  const rows = tasks.map((task) => {
    const row = el(
      'tr',
      { 'data-task-id': task.id },
      el('td', {}, el('code', { text: task.id })),
      el('td', {}, stateBadge(task.status?.state)),
      el('td', { class: 'muted', text: task.status?.timestamp ?? '' }),
    );
    if (task.id === state.selected) row.classList.add('selected');
    row.addEventListener('click', () => selectTask(task.id));
    return row;
  });
  $('tasks').replaceChildren(...rows);
  $('tasks-note').textContent = tasks.length === 0 ? 'No tasks yet: send a message above.' : '';
};

/** The list's row of a task follows its stream, between two ListTasks refreshes. */
const updateRow = (task) => {
  const row = [...$('tasks').querySelectorAll('tr')].find(
    (candidate) => candidate.dataset.taskId === task.id,
  );
  if (!row) return;
  row.cells[1]?.replaceChildren(stateBadge(task.status?.state));
  if (row.cells[2]) row.cells[2].textContent = task.status?.timestamp ?? '';
};

const loadTasks = async () => {
  if (!state.endpoint) return;
  const endpoint = state.endpoint;
  try {
    const result = await rpc('ListTasks', { pageSize: 50 });
    // A Connect to another agent since this call began: its own list applies, not this one.
    if (endpoint !== state.endpoint) return;
    renderTasks(result.tasks ?? []);
    setStatus(`Connected to ${state.endpoint} — ${result.totalSize ?? (result.tasks ?? []).length} task(s).`);
  } catch (error) {
    if (endpoint === state.endpoint) setStatus(`ListTasks failed: ${error.message}`, true);
  }
};

// ---- one task

const renderFacts = (task) => {
  const facts = [
    ['State', stateBadge(task.status?.state)],
    ['Context', el('code', { text: task.contextId ?? '—' })],
    ['Updated', document.createTextNode(task.status?.timestamp ?? '—')],
  ];
  $('task-facts').replaceChildren(
    ...facts.flatMap(([name, value]) => [el('dt', { text: name }), el('dd', {}, value)]),
  );
};

const renderArtifacts = (artifacts) => {
  const list = [...artifacts.values()];
  if (list.length === 0) {
    $('artifacts').replaceChildren(document.createTextNode('No artifacts (or none you may see).'));
    return;
  }
  $('artifacts').replaceChildren(
    ...list.map((artifact) =>
      el(
        'div',
        { class: 'artifact' },
        el('strong', { text: `${artifact.name ?? artifact.artifactId}: ` }),
        el('span', { text: partsText(artifact.parts) }),
      ),
    ),
  );
};

const addTimeline = (revision, kind, stateValue, detail, timestamp) => {
  const what = el('div', {});
  if (stateValue) what.append(stateBadge(stateValue), ' ');
  what.append(el('span', { text: detail }));
  const item = el(
    'li',
    { 'data-kind': kind },
    el('span', { class: 'rev mono', text: revision === undefined ? '' : `r${revision}` }),
    el('span', { class: 'muted', text: `${kind} ${time(timestamp)}` }),
    what,
  );
  $('timeline').append(item);
};

/** A webhook URL as shown: origin and path only — a query may carry a secret (`?token=`). */
const shownUrl = (url) => {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}${parsed.search ? '?…' : ''}`;
  } catch {
    return '(not a URL)';
  }
};

/** Every page of a list method, up to a bound (a task has few configs and revisions). */
const listAll = async (method, params, key) => {
  const items = [];
  let pageToken;
  for (let page = 0; page < 10; page++) {
    const result = await rpc(method, { ...params, pageSize: 100, ...(pageToken ? { pageToken } : {}) });
    items.push(...(result[key] ?? []));
    pageToken = result.nextPageToken;
    if (!pageToken) break;
  }
  return items;
};

const attemptRow = (delivery, attempt) =>
  el(
    'tr',
    {
      'data-revision': String(delivery.revision),
      'data-attempt': String(attempt.attempt),
      'data-outcome': attempt.outcome,
    },
    el('td', { class: 'mono', text: `r${delivery.revision}` }),
    el('td', { text: String(attempt.attempt) }),
    el('td', {}, el('span', { class: `outcome ${attempt.outcome}`, text: attempt.outcome })),
    el('td', { text: attempt.httpStatus === undefined ? (attempt.error ?? '') : String(attempt.httpStatus) }),
    el('td', { class: 'muted', text: time(attempt.timestamp) }),
    el('td', {
      class: 'muted',
      text: attempt.nextAttemptTimestamp
        ? `retry ${time(attempt.nextAttemptTimestamp)}`
        : delivery.state === 'GAVE_UP' && attempt === delivery.attempts.at(-1)
          ? 'gave up'
          : '',
    }),
  );

const renderConfig = (configId, config, deliveries) =>
  el(
    'div',
    { class: 'push-config', 'data-config-id': configId },
    el(
      'div',
      {},
      el('code', { text: configId }),
      document.createTextNode(config ? ` → ${shownUrl(config.url)}` : ' (config deleted)'),
    ),
    deliveries.length === 0
      ? el('div', { class: 'muted', text: 'No delivery attempted yet.' })
      : el(
          'table',
          { class: 'attempts' },
          el(
            'thead',
            {},
            el(
              'tr',
              {},
              ...['Rev', '#', 'Outcome', 'HTTP', 'Time', 'Next'].map((name) => el('th', { text: name })),
            ),
          ),
          el(
            'tbody',
            {},
            ...deliveries.flatMap((delivery) =>
              delivery.attempts.map((attempt) => attemptRow(delivery, attempt)),
            ),
          ),
        ),
  );

/** The task's push configs, each with its deliveries' attempts; true while a retry is pending. */
const renderPush = async (taskId) => {
  const call = ++state.pushRender;
  try {
    const [configs, deliveries] = await Promise.all([
      listAll('ListTaskPushNotificationConfigs', { taskId }, 'configs'),
      listAll('ListTaskPushDeliveries', { taskId }, 'deliveries'),
    ]);
    if (state.selected !== taskId || call !== state.pushRender) return false;
    const ids = [...new Set([...configs.map((config) => config.id), ...deliveries.map((d) => d.configId)])];
    $('push').replaceChildren(
      ...(ids.length === 0
        ? [document.createTextNode('No push configs for this task.')]
        : ids.map((id) =>
            renderConfig(
              id,
              configs.find((config) => config.id === id),
              deliveries.filter((delivery) => delivery.configId === id),
            ),
          )),
    );
    return deliveries.some((delivery) => delivery.state === 'RETRYING');
  } catch (error) {
    if (state.selected === taskId) $('push').textContent = `Push deliveries unavailable: ${error.message}`;
    return false;
  }
};

/** A revision arrived: its deliveries follow shortly; replayed revisions make one read, not many. */
const refreshPushSoon = (taskId) => {
  clearTimeout(state.pushSoon);
  state.pushSoon = setTimeout(() => void renderPush(taskId), 250);
};

/** Re-reads the deliveries every few seconds; stops a minute after the task settled with no retry pending. */
const pollPush = (taskId) => {
  clearInterval(state.pushTimer);
  $('push-live').textContent = '● polling';
  state.pushTimer = setInterval(async () => {
    if (state.selected !== taskId) return;
    const retrying = await renderPush(taskId);
    if (!retrying && state.settledAt !== undefined && Date.now() - state.settledAt > pushPollAfterSettledMs) {
      clearInterval(state.pushTimer);
      $('push-live').textContent = '';
    }
  }, pushPollMs);
};

/** Reads a text/event-stream body: calls onEvent({ id, data }) per event, ignores comments. */
const readEvents = async (response, onEvent) => {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, '\n');
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id;
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('id:')) id = line.slice(3).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length > 0) onEvent({ id, data: data.join('\n') });
      end = buffer.indexOf('\n\n');
    }
  }
};

const showSnapshot = (task, revision, artifacts) => {
  renderFacts(task);
  for (const artifact of task.artifacts ?? []) artifacts.set(artifact.artifactId, artifact);
  const message = task.status?.message;
  addTimeline(
    revision,
    'task',
    task.status?.state,
    message ? `${roleName(message.role)}: ${partsText(message.parts)}` : '',
    task.status?.timestamp,
  );
};

const follow = async (taskId, controller) => {
  const artifacts = new Map();
  let current;
  const response = await fetch(state.endpoint, {
    method: 'POST',
    headers: headers({ Accept: 'text/event-stream', 'Last-Event-ID': '1' }),
    body: body('SubscribeToTask', { id: taskId }),
    signal: controller.signal,
  });
  if (response.status === 401) throw new Error('401 Unauthorized: check the token');
  const type = response.headers.get('content-type') ?? '';
  if (!type.includes('text/event-stream')) {
    // An error before the first event, e.g. a task at revision 1 that has already settled.
    const answer = await response.json();
    if (answer.error?.code === -32004) {
      const task = await rpc('GetTask', { id: taskId, historyLength: 0 });
      showSnapshot(task, undefined, artifacts);
      renderArtifacts(artifacts);
      $('live').textContent = 'settled';
      state.settledAt = Date.now();
      return;
    }
    throw new RpcError(answer.error ?? { code: response.status, message: 'unexpected answer' });
  }
  $('live').textContent = '● live';
  const pendingArtifacts = [];
  await readEvents(response, ({ id, data }) => {
    const answer = JSON.parse(data);
    if (answer.error) throw new RpcError(answer.error);
    const event = answer.result;
    const revision = id === undefined ? undefined : Number(id);
    if (event.task) {
      current = event.task;
      showSnapshot(event.task, revision, artifacts);
    } else if (event.artifactUpdate) {
      // Its revision is the id of the statusUpdate that follows it (decision 0008).
      const artifact = event.artifactUpdate.artifact;
      const previous = artifacts.get(artifact.artifactId);
      artifacts.set(
        artifact.artifactId,
        event.artifactUpdate.append && previous
          ? { ...previous, parts: [...(previous.parts ?? []), ...(artifact.parts ?? [])] }
          : artifact,
      );
      pendingArtifacts.push(artifact);
    } else if (event.statusUpdate) {
      const status = event.statusUpdate.status ?? {};
      for (const artifact of pendingArtifacts.splice(0)) {
        addTimeline(
          revision,
          'artifact',
          undefined,
          `${artifact.name ?? artifact.artifactId}: ${partsText(artifact.parts)}`,
        );
      }
      const message = status.message;
      addTimeline(
        revision,
        'status',
        status.state,
        message ? `${roleName(message.role)}: ${partsText(message.parts)}` : '',
        status.timestamp,
      );
      current = { ...(current ?? { id: taskId }), status };
      renderFacts(current);
      updateRow(current);
      refreshPushSoon(taskId);
    } else if (event.message) {
      addTimeline(
        revision,
        'message',
        undefined,
        `${roleName(event.message.role)}: ${partsText(event.message.parts)}`,
      );
    }
    renderArtifacts(artifacts);
  });
  const settled = terminal.has(stateName(current?.status?.state));
  if (settled) state.settledAt = Date.now();
  $('live').textContent = settled ? 'settled' : 'stream closed (re-select to re-attach)';
};

const selectTask = async (taskId) => {
  state.stream?.abort();
  const controller = new AbortController();
  state.stream = controller;
  state.selected = taskId;
  for (const row of $('tasks').querySelectorAll('tr')) {
    row.classList.toggle('selected', row.dataset.taskId === taskId);
  }
  $('task-id').textContent = taskId;
  $('task-facts').replaceChildren();
  $('timeline').replaceChildren();
  $('artifacts').textContent = '—';
  $('push').textContent = '…';
  $('live').textContent = '';
  state.settledAt = undefined;
  void renderPush(taskId);
  pollPush(taskId);
  try {
    await follow(taskId, controller);
  } catch (error) {
    if (controller.signal.aborted) return;
    $('live').textContent = '';
    setStatus(`Task ${taskId}: ${error.message}`, true);
  }
  if (state.selected === taskId) void loadTasks();
};

// ---- connecting and sending

/** Each Connect (or the one on open) supersedes the ones before it: only the latest one applies. */
let connectGeneration = 0;

const connect = async () => {
  const generation = ++connectGeneration;
  const url = $('agent-url').value.trim() || servedFrom;
  storage.setItem('a2a-viewer-url', url);
  storage.setItem('a2a-viewer-token', $('token').value.trim());
  try {
    const response = await fetch(cardUrlOf(url), { headers: { 'A2A-Version': '1.0' } });
    if (!response.ok) throw new Error(`agent card: HTTP ${response.status}`);
    const card = await response.json();
    if (generation !== connectGeneration) return;
    const jsonRpc = (card.supportedInterfaces ?? []).find((entry) => entry.protocolBinding === 'JSONRPC');
    if (!jsonRpc) throw new Error('the agent card declares no JSON-RPC interface');
    state.endpoint = jsonRpc.url;
    setStatus(`Connected to ${card.name ?? state.endpoint}.`);
    await loadTasks();
    clearInterval(state.listTimer);
    state.listTimer = setInterval(loadTasks, 5000);
  } catch (error) {
    if (generation === connectGeneration) setStatus(`Cannot connect: ${error.message}`, true);
  }
};

const send = async (event) => {
  event.preventDefault();
  const text = $('send-text').value.trim();
  if (!text || !state.endpoint) return;
  try {
    const { task } = await rpc('SendMessage', {
      message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
      configuration: { returnImmediately: true },
    });
    $('send-text').value = '';
    if (task?.id) {
      await loadTasks();
      void selectTask(task.id);
    }
  } catch (error) {
    setStatus(`SendMessage failed: ${error.message}`, true);
  }
};

$('agent-url').value = storage.getItem('a2a-viewer-url') ?? servedFrom;
$('token').value = storage.getItem('a2a-viewer-token') ?? '';
$('connect').addEventListener('click', connect);
$('refresh').addEventListener('click', loadTasks);
$('send-form').addEventListener('submit', send);
// Connect on open (decision 0057) when served by `npm start` on this machine (local mode), when a
// token is remembered from an earlier visit, or when asked with `?connect`; otherwise wait for
// Connect (a deployment's page needs the user's token first).
const servedLocally = ['127.0.0.1', 'localhost', '[::1]'].includes(window.location.hostname);
if (
  new URLSearchParams(window.location.search).has('connect') ||
  servedLocally ||
  storage.getItem('a2a-viewer-token')
) {
  void connect();
}
