//! Saving and loading a model's weights in the safetensors format: the bytes follow the
//! format (checked field by field with a real JSON parser), a reloaded model computes the same
//! outputs, and bad files fail with a clear error that leaves the model as it was.

use gpulab::nn::{self, Module};
use gpulab::{fork_rng, manual_seed, DType, Device, Tensor};

fn model() -> nn::Sequential {
    nn::Sequential::new()
        .add(nn::Conv2d::new(1, 2, 3))
        .add(nn::ReLU)
        .add(nn::Flatten)
        .add(nn::Linear::new(2 * 4 * 4, 3))
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("gpulab-safetensors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn the_file_follows_the_format() {
    fork_rng(1, || {
        let m = model();
        let path = tmp("format.safetensors");
        nn::save_safetensors(&m, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        assert_eq!(n % 8, 0, "header padded to 8 bytes");
        let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
        let data = &bytes[8 + n..];
        let w = &header["3.weight"];
        assert_eq!(w["dtype"], "F32");
        assert_eq!(w["shape"], serde_json::json!([3, 32]));
        let [a, b] = [0, 1].map(|i| w["data_offsets"][i].as_u64().unwrap() as usize);
        assert_eq!(b - a, 3 * 32 * 4);
        let first = f32::from_le_bytes(data[a..a + 4].try_into().unwrap());
        let want = m.named_parameters()[2].1.tensor().to_vec::<f32>().unwrap()[0];
        assert_eq!(first, want);
        let names: Vec<&String> = header.as_object().unwrap().keys().collect();
        for k in ["0.weight", "0.bias", "3.weight", "3.bias", "__metadata__"] {
            assert!(names.iter().any(|n| *n == k), "{k} missing from {names:?}");
        }
        assert_eq!(header["0.weight"]["shape"], serde_json::json!([2, 1, 3, 3]));
    })
}

#[test]
fn a_reloaded_model_computes_the_same_outputs() {
    fork_rng(2, || {
        let a = model();
        let path = tmp("roundtrip.safetensors");
        nn::save_safetensors(&a, &path).unwrap();
        manual_seed(3);
        let b = model();
        let x = Tensor::randn((2, 1, 6, 6), Device::Cpu).unwrap();
        let before = b.forward(&x).unwrap().to_vec::<f32>().unwrap();
        nn::load_safetensors(&b, &path).unwrap();
        let ya = a.forward(&x).unwrap().to_vec::<f32>().unwrap();
        let yb = b.forward(&x).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(ya, yb);
        assert_ne!(before, yb, "the load changed the weights");
        // Loading converts to the parameters' dtype.
        b.to_dtype(DType::F64).unwrap();
        nn::load_safetensors(&b, &path).unwrap();
        assert_eq!(b.parameters()[0].tensor().dtype(), DType::F64);
        // Every dtype survives the trip.
        let t = vec![
            (
                "f16".to_string(),
                Tensor::from_vec(vec![1.5f32, -2.0], 2, Device::Cpu)
                    .unwrap()
                    .to_dtype(DType::F16)
                    .unwrap(),
            ),
            (
                "i64".to_string(),
                Tensor::from_vec(vec![7i64, -9], 2, Device::Cpu).unwrap(),
            ),
            (
                "b".to_string(),
                Tensor::from_vec(vec![true, false], 2, Device::Cpu).unwrap(),
            ),
        ];
        let p = tmp("dtypes.safetensors");
        nn::safetensors::save(&t, &p).unwrap();
        let back = nn::safetensors::load(&p).unwrap();
        for ((n1, t1), (n2, t2)) in t.iter().zip(&back) {
            assert_eq!(n1, n2);
            assert_eq!(t1.dtype(), t2.dtype());
            assert_eq!(t1.to_f64_vec().unwrap(), t2.to_f64_vec().unwrap());
        }
    })
}

#[test]
fn bad_files_say_what_is_wrong_and_change_nothing() {
    fork_rng(4, || {
        let small = nn::Sequential::new().add(nn::Linear::new(2, 3));
        let path = tmp("small.safetensors");
        nn::save_safetensors(&small, &path).unwrap();
        let other = nn::Sequential::new().add(nn::Linear::new(4, 3));
        let before = other.parameters()[0].tensor().to_vec::<f32>().unwrap();
        let err = nn::load_safetensors(&other, &path).unwrap_err().to_string();
        assert!(
            err.contains("0.weight") && err.contains("[3, 2]") && err.contains("[3, 4]"),
            "{err}"
        );
        assert_eq!(
            other.parameters()[0].tensor().to_vec::<f32>().unwrap(),
            before
        );
        let deeper = nn::Sequential::new()
            .add(nn::ReLU)
            .add(nn::Linear::new(2, 3));
        let err = nn::load_safetensors(&deeper, &path)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"1.weight\"") && err.contains("0.weight"),
            "{err}"
        );
        let junk = tmp("junk.safetensors");
        std::fs::write(&junk, b"abc").unwrap();
        let err = nn::load_safetensors(&small, &junk).unwrap_err().to_string();
        assert!(err.contains("not a safetensors file"), "{err}");
        let err = nn::load_safetensors(&small, tmp("missing.safetensors"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot read") && err.contains("missing.safetensors"),
            "{err}"
        );
    })
}
