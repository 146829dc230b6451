"""The training loop in a real kernel session: the live bar and chart travel as one
display_data each and then update_display_data under the same ids; an interrupt stops
training at a batch boundary and the model stays usable in the next cell."""

import time

from test_integration import interrupt_once_started

SETUP = """
manual_seed(0);
let x = Tensor::randn((512, 2), Device::Cpu)?;
let y = x.sum_dim(1)?.gt(0.0)?.to_dtype(DType::I64)?;
let data = TensorDataset::new(x.clone(), y)?;
let mut model = nn::Sequential::new().add(nn::Linear::new(2, 16)).add(nn::ReLU).add(nn::Linear::new(16, 2));
let mut opt = optim::Adam::new(model.parameters(), 0.01);
"""


def test_fit_shows_a_live_bar_and_chart_updated_in_place(kernel):
    reply, _ = kernel.execute(SETUP)
    assert reply["status"] == "ok", reply
    code = """
let history = model.fit(&mut opt, Loss::CrossEntropy, &data)
    .epochs(3).batch_size(8).validation_data(&data).run()?;
history
"""
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok", reply
    shown = [m for m in outputs if m["msg_type"] == "display_data"]
    updates = [m for m in outputs if m["msg_type"] == "update_display_data"]
    assert len(shown) == 2, [m["content"]["data"].keys() for m in shown]
    bar, chart = (m["content"]["transient"]["display_id"] for m in shown)
    assert bar != chart
    assert "image/svg+xml" in shown[1]["content"]["data"]
    ids = {m["content"]["transient"]["display_id"] for m in updates}
    assert ids == {bar, chart}, ids
    last_bar = [m for m in updates if m["content"]["transient"]["display_id"] == bar][-1]
    text = last_bar["content"]["data"]["text/plain"]
    assert "done: 3 epochs" in text and "val_accuracy" in text, text
    # The returned History shows as a table.
    result = [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]
    assert "val_accuracy" in result["text/html"], result


def test_an_interrupt_stops_fit_and_keeps_the_model(fresh_kernel):
    k = fresh_kernel
    reply, _ = k.execute(SETUP)
    assert reply["status"] == "ok", reply
    # Batches of one sample over 512 samples for 1000 epochs: far longer than the test waits,
    # so only the interrupt can end it.
    code = """println!("started");
let h = model.fit(&mut opt, Loss::CrossEntropy, &data).epochs(1000).batch_size(1).run()?;
"""
    start = time.monotonic()
    reply, outputs, after = interrupt_once_started(k, code, 1.0)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    assert after < 10, f"{after:.1f} s from the interrupt to the reply"
    assert time.monotonic() - start < 120
    updates = [m for m in outputs if m["msg_type"] == "update_display_data"]
    texts = [m["content"]["data"].get("text/plain", "") for m in updates]
    assert any("interrupted" in t for t in texts), texts[-1:]
    reply, outputs = k.execute("let p = model.predict(&x)?; p.shape().to_vec()")
    assert reply["status"] == "ok", reply
    assert k.result_text(outputs) == "[512, 2]"
