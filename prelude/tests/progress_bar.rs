//! The progress bar: one display, then throttled updates under the same display_id.
use gpulab::progress::{Finish, ProgressState};
use gpulab::timing::Clock;
use gpulab::*;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

#[derive(Clone, Default)]
struct FakeClock(Rc<Cell<Duration>>);
impl Clock for FakeClock {
    fn now(&self) -> Duration {
        self.0.get()
    }
}

fn parse(line: &str) -> Value {
    let body = line.strip_prefix("\x1egpulab:").expect("protocol prefix");
    serde_json::from_str(body.trim_end_matches('\n')).unwrap()
}

#[test]
fn one_display_then_throttled_updates_with_the_same_id() {
    let clock = FakeClock::default();
    let lines = RefCell::new(Vec::<String>::new());
    let mut seen = 0;
    for _ in (0..100)
        .progress()
        .desc("work")
        .clock(clock.clone())
        .interrupt_probe(|| false)
        .sink(|l| lines.borrow_mut().push(l.to_string()))
    {
        seen += 1;
        clock.0.set(clock.0.get() + Duration::from_millis(10)); // each item takes 10 ms
    }
    assert_eq!(seen, 100);
    let msgs: Vec<Value> = lines.borrow().iter().map(|l| parse(l)).collect();
    assert_eq!(msgs[0]["op"], "display");
    let id = msgs[0]["display_id"].as_str().unwrap().to_string();
    assert!(msgs[1..]
        .iter()
        .all(|m| m["op"] == "update" && m["display_id"] == id.as_str()));
    // 1 s of work at one redraw per 100 ms: about 10 updates plus the final one, not 100.
    let updates = msgs.len() - 1;
    assert!((9..=12).contains(&updates), "{updates} updates");
    let last = msgs.last().unwrap();
    let plain = last["data"]["text/plain"].as_str().unwrap();
    assert!(plain.contains("100/100"), "{plain}");
    assert!(plain.starts_with("work: 100%"), "{plain}");
    assert!(plain.contains("100.00 it/s"), "{plain}");
    assert!(last["data"]["text/html"]
        .as_str()
        .unwrap()
        .contains("width:100.0%"));
    assert!(msgs[0]["data"]["text/plain"]
        .as_str()
        .unwrap()
        .contains("0/100"));
}

#[test]
fn interrupt_ends_the_loop_and_says_so() {
    let lines = RefCell::new(Vec::<String>::new());
    let n = Cell::new(0);
    let mut seen = vec![];
    for i in progress(0..50)
        .clock(FakeClock::default())
        .interrupt_probe(|| n.get() >= 7)
        .sink(|l| lines.borrow_mut().push(l.to_string()))
    {
        seen.push(i);
        n.set(n.get() + 1);
    }
    assert_eq!(seen, (0..7).collect::<Vec<_>>());
    let last = parse(lines.borrow().last().unwrap());
    let plain = last["data"]["text/plain"].as_str().unwrap().to_string();
    assert!(
        plain.contains("7/50") && plain.contains("interrupted"),
        "{plain}"
    );
    assert!(last["data"]["text/html"]
        .as_str()
        .unwrap()
        .contains("#d9534f"));
}

#[test]
fn break_marks_the_bar_stopped() {
    let lines = RefCell::new(Vec::<String>::new());
    for i in (0..10)
        .progress()
        .interrupt_probe(|| false)
        .sink(|l| lines.borrow_mut().push(l.to_string()))
    {
        if i == 3 {
            break;
        }
    }
    let last = parse(lines.borrow().last().unwrap());
    assert!(last["data"]["text/plain"]
        .as_str()
        .unwrap()
        .contains("stopped"));
    assert_eq!(last["op"], "update");
}

#[test]
fn unknown_total_and_explicit_total() {
    let mut st = ProgressState::new(None, "id".into());
    let t0 = Duration::from_secs(5);
    st.begin(t0);
    for k in 1..=4 {
        st.advance(t0 + Duration::from_secs(k));
    }
    let plain = st.plain(t0 + Duration::from_secs(4));
    assert!(plain.starts_with("4 [00:04, 1.00 it/s]"), "{plain}");
    assert_eq!(st.remaining(t0 + Duration::from_secs(4)), None);

    let mut st = ProgressState::new(Some(10), "id".into());
    st.begin(Duration::ZERO);
    st.advance(Duration::from_secs(2));
    // 1 item in 2 s: 9 left take 18 s; slow loops show seconds per item.
    assert_eq!(
        st.remaining(Duration::from_secs(2)),
        Some(Duration::from_secs(18))
    );
    let plain = st.plain(Duration::from_secs(2));
    assert!(plain.contains("1/10 [00:02<00:18, 2.00 s/it]"), "{plain}");
    assert!(st.end(Duration::from_secs(3), Finish::Done).is_some());
    assert!(
        st.end(Duration::from_secs(4), Finish::Done).is_none(),
        "ends once"
    );

    let lines = RefCell::new(Vec::<String>::new());
    let v: Vec<i32> = (0..20)
        .filter(|x| x % 2 == 0)
        .progress()
        .total(10)
        .interrupt_probe(|| false)
        .sink(|l| lines.borrow_mut().push(l.to_string()))
        .collect();
    assert_eq!(v.len(), 10);
    let last = parse(lines.borrow().last().unwrap());
    assert!(last["data"]["text/plain"]
        .as_str()
        .unwrap()
        .contains("10/10"));
}

#[test]
fn empty_iterator_shows_and_finishes() {
    let lines = RefCell::new(Vec::<String>::new());
    let n = progress(Vec::<u8>::new())
        .interrupt_probe(|| false)
        .sink(|l| lines.borrow_mut().push(l.to_string()))
        .count();
    assert_eq!(n, 0);
    let lines = lines.borrow();
    assert_eq!(lines.len(), 2);
    assert_eq!(parse(&lines[0])["op"], "display");
    assert!(parse(&lines[1])["data"]["text/plain"]
        .as_str()
        .unwrap()
        .contains("0/0"));
}
