'use strict';
/* The dashboard's start: hash routes (#/, #/jobs/ID, #/history/..., #/kernels,
 * #/problems, #/problems/NAME, #/problems/NAME/versions/N), one
 * EventSource on GET /events feeding the queue and the open job, and a clock
 * that ticks running jobs' times. */
(function () {
  const conn = document.getElementById('conn');

  function setConn(state, text) {
    conn.dataset.state = state;
    conn.textContent = text;
  }

  /* The token form in the header: saved in this browser, then the page reloads. */
  document.getElementById('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    localStorage.setItem('gpulab.token', document.getElementById('token').value.trim());
    location.reload();
  });

  function route() {
    const hash = location.hash || '#/';
    const job = /^#\/jobs\/(\d+)$/.exec(hash);
    const hist = /^#\/history\/([a-z]+)\/([^/]*)\/(.*)$/.exec(hash);
    const kernels = hash === '#/kernels';
    const problems = /^#\/problems(?:\/([^/]+)(?:\/versions\/(\d+))?)?$/.exec(hash);
    document.getElementById('view-dashboard').hidden = !!job || kernels || !!problems;
    document.getElementById('view-job').hidden = !job;
    document.getElementById('view-kernels').hidden = !kernels;
    document.getElementById('view-problems').hidden = !problems;
    if (kernels) {
      GL.jobView.hide();
      GL.kernelsView.show();
    } else if (problems) {
      GL.jobView.hide();
      GL.problemsView.show(problems[1] ? decodeURIComponent(problems[1]) : null, problems[2] ? Number(problems[2]) : null);
      window.scrollTo(0, 0);
    } else if (job) {
      GL.jobView.show(Number(job[1]));
      window.scrollTo(0, 0);
    } else {
      GL.jobView.hide();
      if (hist) GL.dash.showHistory(hist[1], decodeURIComponent(hist[2]), decodeURIComponent(hist[3]));
    }
  }

  /* The browser's EventSource reconnects by itself (sending Last-Event-ID) after a
   * dropped stream; a refused one (closed) is retried here. On every (re)open the
   * queue is fetched again, so nothing missed while away stays stale. */
  function connect() {
    /* An EventSource cannot send headers: the token goes in the query. */
    const token = GL.token();
    const es = new EventSource(GL.url(token ? `/events?access_token=${encodeURIComponent(token)}` : '/events'));
    es.addEventListener('open', () => {
      setConn('live', 'live');
      GL.dash.refreshQueue();
    });
    es.addEventListener('error', () => {
      setConn('down', es.readyState === EventSource.CLOSED ? 'offline' : 'reconnecting…');
      if (es.readyState === EventSource.CLOSED) setTimeout(connect, 3000);
    });
    es.addEventListener('state', (e) => {
      const ev = JSON.parse(e.data);
      GL.dash.onState(ev);
      GL.jobView.onState(ev);
    });
    es.addEventListener('progress', (e) => {
      const ev = JSON.parse(e.data);
      GL.dash.onProgress(ev);
      GL.jobView.onProgress(ev);
    });
  }

  async function start() {
    document.getElementById('charts-off').hidden = GL.chartsOn();
    document.body.classList.toggle('no-charts', !GL.chartsOn());
    await GL.loadExperiments();
    GL.dash.buildForms();
    GL.dash.initQueue();
    GL.dash.loadDevice().then(() => GL.jobView.id && GL.jobView.reload());
    GL.dash.refreshQueue();
    GL.dash.loadHistory();
    connect();
    window.addEventListener('hashchange', route);
    route();
    setInterval(() => { GL.dash.tick(); GL.jobView.tick(); }, 500);
  }

  start();
})();
