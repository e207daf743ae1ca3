//! The Grafana dashboard (deploy/grafana/spinscope-watch.json) against a real Prometheus that
//! scrapes a real `spinscope watch` of a throwaway MariaDB during bursts, with the recording
//! rules of deploy/prometheus loaded: every panel query is valid PromQL and returns finite data,
//! the server variable lists the server, and the Threads_running panel shows the burst. The
//! watch runs an rt capture (a trigger on `rt_p99_ms` that never fires) and a client queries
//! the server over TCP throughout, so the response-time panels have requests to show.
//! With `SPINSCOPE_DASHBOARD_RENDER=DIR` it also draws every panel's results over the run into
//! DIR/dashboard.svg (and DIR/dashboard.png with chromium) for a human to look at.

use crate::common;

/// The body of `GET path` on 127.0.0.1:`port` ("" when nothing answers).
fn http_get(port: u16, path: &str) -> String {
    let out = common::http_get(port, path);
    out.split("\r\n\r\n").nth(1).unwrap_or("").to_string()
}
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::mariadb::{available, skip_reason, which, MariaDb};
use common::{free_port, Reaped};
use mysql::prelude::Queryable;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One panel of the dashboard: its title and the (expression, legend) of each target.
struct Panel {
    title: String,
    targets: Vec<(String, String)>,
}

fn panels(dash: &Value) -> Vec<Panel> {
    let mut out = Vec::new();
    let mut stack: Vec<&Value> = dash["panels"].as_array().unwrap().iter().collect();
    while let Some(p) = stack.pop() {
        if let Some(inner) = p["panels"].as_array() {
            stack.extend(inner.iter());
        }
        let Some(ts) = p["targets"].as_array() else {
            continue;
        };
        out.push(Panel {
            title: p["title"].as_str().unwrap().to_string(),
            targets: ts
                .iter()
                .map(|t| {
                    (
                        t["expr"].as_str().unwrap().to_string(),
                        t["legendFormat"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect(),
        });
    }
    out.sort_by_key(|p| p.title.clone());
    out
}

/// What Grafana sends for the dashboard's variables: "All" servers, a rate window of 10 s
/// (Grafana's $__rate_interval is at least 4 scrape intervals; the test scrapes every 1 s).
fn as_grafana_sends(expr: &str) -> String {
    expr.replace("$server", ".+")
        .replace("$__rate_interval", "10s")
}

fn enc(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// Prometheus's answer to an instant query: Ok(result array) or Err(the error or body).
fn query(port: u16, expr: &str) -> Result<Vec<Value>, String> {
    let body = http_get(port, &format!("/api/v1/query?query={}", enc(expr)));
    let v: Value = serde_json::from_str(&body).map_err(|_| body.clone())?;
    if v["status"] != "success" {
        return Err(body);
    }
    Ok(v["data"]["result"].as_array().cloned().unwrap_or_default())
}

/// Whether a result has at least one finite value.
fn has_finite(result: &[Value]) -> bool {
    result.iter().any(|r| {
        r["value"][1]
            .as_str()
            .and_then(|s| s.parse::<f64>().ok())
            .is_some_and(f64::is_finite)
    })
}

/// `threads` clients for `secs`: half sleeping in SELECT SLEEP(0.3) (Threads_running), half
/// on a CPU in BENCHMARK() (also the /proc running threads).
fn burst(socket: &Path, threads: usize, secs: f64) {
    let hs: Vec<_> = (0..threads)
        .map(|i| {
            let sock = socket.to_string_lossy().into_owned();
            std::thread::spawn(move || {
                let o = mysql::OptsBuilder::new()
                    .socket(Some(sock))
                    .user(Some("root"));
                let mut c = mysql::Conn::new(o).expect("load connection");
                let t0 = Instant::now();
                let q = if i % 2 == 0 {
                    "SELECT SLEEP(0.3)"
                } else {
                    "SELECT BENCHMARK(300000, MD5('spinscope'))"
                };
                while t0.elapsed().as_secs_f64() < secs {
                    let _: Option<i64> = c.query_first(q).unwrap();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

/// A client querying the server over TCP (where the rt capture sees it) every 20 ms until
/// dropped.
struct TcpClient {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<u64>>,
}

impl TcpClient {
    fn start(port: u16) -> TcpClient {
        let o = mysql::OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(port)
            .prefer_socket(false)
            .user(Some("root"));
        let mut c = mysql::Conn::new(o).expect("TCP connection to the throwaway server");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let mut n = 0;
            while !flag.load(Ordering::Relaxed) {
                let _: Option<i64> = c.query_first("SELECT 1").unwrap();
                n += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            n
        });
        TcpClient {
            stop,
            handle: Some(handle),
        }
    }

    /// Stop and return the queries sent.
    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().map_or(0, |h| h.join().unwrap())
    }
}

impl Drop for TcpClient {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn wait_for_file(path: &Path, needle: &str, secs: u64) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(secs) {
        if std::fs::read_to_string(path).is_ok_and(|s| s.contains(needle)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn the_dashboard_parses_and_names_only_spinscope_metrics() {
    let text = std::fs::read_to_string(root().join("deploy/grafana/spinscope-watch.json")).unwrap();
    let dash: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(dash["uid"], "spinscope-watch");
    let ps = panels(&dash);
    assert!(ps.len() >= 12, "{} panels", ps.len());
    let titles: Vec<&str> = ps.iter().map(|p| p.title.as_str()).collect();
    for want in [
        "Running threads (/proc, every tick)",
        "Threads_running (SQL, every read)",
        "Bursts",
        "Spin budget against design",
        "Sampler rate",
        "Spin budget design ratio by server",
        "Response time (server-side, from packets)",
        "Response time p99 by server (from packets)",
    ] {
        assert!(titles.contains(&want), "{want} missing: {titles:?}");
    }
    for p in &ps {
        for (e, _) in &p.targets {
            assert!(
                e.contains("spinscope_"),
                "{}: {e} reads no spinscope metric",
                p.title
            );
        }
    }
}

#[test]
fn every_panel_query_returns_data_from_a_real_prometheus_during_a_burst() {
    let prom = which("prometheus");
    let why = prom
        .is_none()
        .then(|| "prometheus is not installed (apt-get install prometheus)".to_string());
    if skip_reason("every_panel_query_returns_data", why).is_some() {
        return;
    }
    if skip_reason("every_panel_query_returns_data", available().err()).is_some() {
        return;
    }
    let dash: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("deploy/grafana/spinscope-watch.json")).unwrap(),
    )
    .unwrap();
    let ps = panels(&dash);
    let db = MariaDb::start(&["--max-connections=200"]);
    let dir = tempfile::tempdir().unwrap();
    let (wport, pport) = (free_port(), free_port());
    let werr = dir.path().join("watch.err");
    let watch = Reaped(
        Command::new(env!("CARGO_BIN_EXE_spinscope"))
            .arg("watch")
            .arg(format!("root@{}", db.socket.display()))
            .args(["--no-defaults", "--profile-duration", "0", "--history", "5"])
            .args(["--after", "1", "--min-free-disk", "0", "--out"])
            .arg(dir.path().join("caps"))
            .args(["--trigger", "threads_running > 4 for 50ms"])
            // Runs the rt capture on the server's TCP port; SELECT 1 never takes a minute.
            .args(["--trigger", "rt_p99_ms > 60s"])
            .arg("--metrics-listen")
            .arg(format!("127.0.0.1:{wport}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&werr).unwrap())
            .spawn()
            .unwrap(),
    );
    assert!(
        wait_for_file(&werr, "rt capturing port", 30),
        "{}",
        std::fs::read_to_string(&werr).unwrap_or_default()
    );
    let client = TcpClient::start(db.port);
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: spinscope\n    static_configs:\n      - targets: ['127.0.0.1:{wport}']\n",
            root().join("deploy/prometheus/spinscope-rules.yml").display()
        ),
    )
    .unwrap();
    let _prom = Reaped(
        Command::new(prom.unwrap())
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Prometheus up and scraping watch before the bursts, so its windows hold them.
    let t0 = Instant::now();
    while !query(pport, "up{job=\"spinscope\"} == 1").is_ok_and(|r| has_finite(&r)) {
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "Prometheus did not scrape watch within 90 s"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let t_start = std::time::SystemTime::now();
    let render_to = std::env::var_os("SPINSCOPE_DASHBOARD_RENDER");
    // A quiet stretch first when drawing, so the picture shows before, during and after.
    std::thread::sleep(Duration::from_secs(if render_to.is_some() {
        15
    } else {
        2
    }));
    // Two bursts: the second ends a while before the checks, so burst durations are recorded.
    burst(&db.socket, 12, 1.5);
    std::thread::sleep(Duration::from_millis(800));
    burst(&db.socket, 12, 1.0);
    std::thread::sleep(Duration::from_secs(if render_to.is_some() {
        20
    } else {
        3
    }));

    let exprs: Vec<(String, String)> = ps
        .iter()
        .flat_map(|p| {
            p.targets
                .iter()
                .map(|(e, _)| (p.title.clone(), as_grafana_sends(e)))
        })
        .collect();
    let t0 = Instant::now();
    let mut missing: Vec<String> = exprs.iter().map(|(_, e)| e.clone()).collect();
    while !missing.is_empty() && t0.elapsed() < Duration::from_secs(60) {
        missing.retain(|e| match query(pport, e) {
            Ok(r) => !has_finite(&r),
            Err(err) => {
                assert!(
                    err.is_empty() || err.contains("\"status\":\"success\""),
                    "invalid PromQL {e}: {err}"
                );
                true
            }
        });
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(
        missing.is_empty(),
        "panel queries without data after 60 s: {missing:#?}\nwatch: {}",
        std::fs::read_to_string(&werr).unwrap_or_default()
    );
    // rt counted the TCP client's requests (and nothing of the sampler's socket session).
    let rt = query(pport, "max(spinscope_watch_rt_requests_total)").unwrap();
    let rt: f64 = rt[0]["value"][1].as_str().unwrap().parse().unwrap();
    let p99 = query(
        pport,
        "histogram_quantile(0.99, sum by (le) (rate(spinscope_watch_rt_seconds_bucket[1m])))",
    )
    .unwrap();
    let p99: f64 = p99[0]["value"][1].as_str().unwrap().parse().unwrap();
    // The server variable's query lists the watched server.
    let servers = http_get(
        pport,
        "/api/v1/label/server/values?match%5B%5D=spinscope_watch_up",
    );
    assert!(servers.contains("mysqld.sock"), "{servers}");
    // The Threads_running panel shows the burst (12 sessions sleeping at once).
    let peak = query(
        pport,
        "max_over_time(spinscope_watch_threads_running_max_10s[5m])",
    )
    .unwrap();
    let peak: f64 = peak[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert!(peak >= 8.0, "the burst peak seen by Prometheus: {peak}");
    if let Some(out) = render_to {
        render(&ps, pport, t_start, Path::new(&out));
    }
    let sent = client.stop() as f64;
    // The client's connection sends a query or two of its own after the login.
    assert!(
        rt >= 10.0 && rt <= sent + 5.0,
        "rt requests {rt} of the {sent} the client sent"
    );
    assert!(p99 > 0.0 && p99 < 1.0, "rt p99 of SELECT 1: {p99} s");
    drop(watch);
}

type Lines = Vec<(String, Vec<(f64, f64)>)>;

/// Every target of a panel over the run, one line per series, times in seconds from `t0`.
fn range(pport: u16, p: &Panel, t0: std::time::SystemTime) -> Lines {
    let start = t0
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let end = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let mut lines = Vec::new();
    for (e, legend) in &p.targets {
        let body = http_get(
            pport,
            &format!(
                "/api/v1/query_range?query={}&start={start:.3}&end={end:.3}&step=1",
                enc(&as_grafana_sends(e))
            ),
        );
        let v: Value = serde_json::from_str(&body).unwrap_or_default();
        for s in v["data"]["result"].as_array().cloned().unwrap_or_default() {
            let mut name = legend.clone();
            for (k, lv) in s["metric"].as_object().cloned().unwrap_or_default() {
                let short = lv.as_str().unwrap_or("").rsplit('/').next().unwrap_or("");
                name = name.replace(&format!("{{{{{k}}}}}"), short);
            }
            let pts: Vec<(f64, f64)> = s["values"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|p| {
                    let y: f64 = p[1].as_str()?.parse().ok()?;
                    let x = p[0].as_f64()? - start;
                    y.is_finite().then_some((x, y))
                })
                .collect();
            lines.push((name, pts));
        }
    }
    lines
}

/// Draw each panel's results into a grid (plotters' SVG backend), then a PNG with chromium.
fn render(ps: &[Panel], pport: u16, t0: std::time::SystemTime, out: &Path) {
    use plotters::prelude::*;
    std::fs::create_dir_all(out).unwrap();
    let svg = out.join("dashboard.svg");
    let cols = 3;
    let rows = ps.len().div_ceil(cols);
    let (w, h) = (1500u32, 330 * rows as u32);
    {
        let area = SVGBackend::new(&svg, (w, h)).into_drawing_area();
        area.fill(&WHITE).unwrap();
        for (p, a) in ps.iter().zip(area.split_evenly((rows, cols))) {
            let lines = range(pport, p, t0);
            let xmax = lines
                .iter()
                .flat_map(|l| l.1.iter().map(|q| q.0))
                .fold(1.0, f64::max);
            let ymax = lines
                .iter()
                .flat_map(|l| l.1.iter().map(|q| q.1))
                .fold(0.0, f64::max)
                .max(1e-9)
                * 1.1;
            let mut c = ChartBuilder::on(&a)
                .caption(&p.title, ("sans-serif", 15))
                .margin(8)
                .x_label_area_size(22)
                .y_label_area_size(48)
                .build_cartesian_2d(0.0..xmax, 0.0..ymax)
                .unwrap();
            c.configure_mesh()
                .x_desc("s since start")
                .y_label_formatter(&|v| {
                    if *v != 0.0 && v.abs() < 0.01 {
                        format!("{v:.1e}")
                    } else {
                        format!("{v:.2}")
                    }
                })
                .label_style(("sans-serif", 10))
                .draw()
                .unwrap();
            for (i, (name, pts)) in lines.iter().enumerate() {
                let col = Palette99::pick(i).to_rgba();
                c.draw_series(LineSeries::new(pts.iter().copied(), col.stroke_width(2)))
                    .unwrap()
                    .label(name.clone())
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 14, y)], col));
            }
            c.configure_series_labels()
                .label_font(("sans-serif", 10))
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .unwrap();
        }
        area.present().unwrap();
    }
    if let Some(chrome) = which("chromium") {
        let png = out.join("dashboard.png");
        let st = Command::new(chrome)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("--window-size={w},{h}"))
            .arg(format!("file://{}", svg.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success() && png.is_file(), "chromium screenshot failed");
    }
}
