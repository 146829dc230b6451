//! ModuleList, ModuleDict, ParameterList and ParameterDict: torch's state_dict names and
//! reprs (strings as torch 2.9 prints them), indexing, train/eval and device moves reaching
//! every member, a model built on them that trains and reloads, and refusals.

use gpulab::nn::{self, Module, ModuleDict, ModuleList, Parameter, ParameterDict, ParameterList};
use gpulab::optim::SGD;
use gpulab::{DType, Device, Tensor, F};

const CPU: Device = Device::Cpu;

fn names(m: &dyn Module) -> Vec<String> {
    m.named_parameters().into_iter().map(|(n, _)| n).collect()
}

#[test]
fn module_list_names_and_prints_as_torch() {
    let list = ModuleList::new()
        .append(nn::Linear::new(2, 2))
        .append(nn::Linear::new(2, 2))
        .append(nn::ReLU)
        .append(nn::Linear::new(2, 2));
    assert_eq!(
        names(&list),
        ["0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias"]
    );
    assert_eq!(
        list.describe(),
        "ModuleList(\n  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)\n  (2): \
         ReLU()\n  (3): Linear(in_features=2, out_features=2, bias=True)\n)"
    );
    assert_eq!(ModuleList::new().describe(), "ModuleList()");
    assert_eq!(list.len(), 4);
    assert_eq!(list.get(2).unwrap().describe(), "ReLU()");
    assert!(list.get(4).is_none());
    let e = list
        .forward(&Tensor::zeros([1, 2], CPU).unwrap())
        .unwrap_err();
    assert!(e.to_string().contains("ModuleList holds modules"), "{e}");
    // Buffers are named the same way, and train/eval reach every member.
    let mut with_norm = ModuleList::new()
        .append(nn::BatchNorm1d::new(3))
        .append(nn::Dropout::new(0.5));
    let buffers: Vec<String> = with_norm.buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        buffers,
        ["0.running_mean", "0.running_var", "0.num_batches_tracked"]
    );
    with_norm.eval();
    let x = Tensor::ones([4, 3], CPU).unwrap();
    let dropped = with_norm.get(1).unwrap().forward(&x).unwrap();
    assert!(
        dropped.equal(&x).unwrap(),
        "Dropout in eval() passes x through"
    );
}

#[test]
fn module_dict_keeps_insertion_order_and_replaces_in_place() {
    let mut d = ModuleDict::new()
        .insert("z", nn::ReLU)
        .insert("a", nn::Linear::new(1, 2));
    assert_eq!(d.keys(), ["z", "a"]);
    assert_eq!(names(&d), ["a.weight", "a.bias"]);
    assert_eq!(
        d.describe(),
        "ModuleDict(\n  (z): ReLU()\n  (a): Linear(in_features=1, out_features=2, bias=True)\n)"
    );
    d.set("z", nn::Tanh);
    assert_eq!(d.keys(), ["z", "a"]);
    assert_eq!(d.get("z").unwrap().describe(), "Tanh()");
    let e = d.module("b").map(|_| ()).unwrap_err().to_string();
    assert!(
        e.contains("no module \"b\"") && e.contains("[\"z\", \"a\"]"),
        "{e}"
    );
}

#[test]
fn parameter_list_and_dict_print_as_torch() {
    let p = |shape: &[usize], dtype: DType| {
        Parameter::new(
            Tensor::zeros(shape.to_vec(), CPU)
                .unwrap()
                .to_dtype(dtype)
                .unwrap(),
        )
        .unwrap()
    };
    let list = ParameterList::new()
        .append(p(&[2, 2], DType::F64))
        .append(p(&[3], DType::F16))
        .append(p(&[], DType::F32));
    assert_eq!(
        list.describe(),
        "ParameterList(\n    (0): Parameter containing: [torch.float64 of size 2x2]\n    (1): \
         Parameter containing: [torch.float16 of size 3]\n    (2): Parameter containing: \
         [torch.float32 of size ]\n)"
    );
    assert_eq!(names(&list), ["0", "1", "2"]);
    assert_eq!(ParameterList::new().describe(), "ParameterList()");
    let dict = ParameterDict::new()
        .insert("a", p(&[2], DType::F32))
        .insert("m", p(&[3], DType::F32));
    assert_eq!(
        dict.describe(),
        "ParameterDict(\n    (a): Parameter containing: [torch.FloatTensor of size 2]\n    (m): \
         Parameter containing: [torch.FloatTensor of size 3]\n)"
    );
    assert_eq!(names(&dict), ["a", "m"]);
    assert_eq!(dict.num_parameters(), 5);
}

/// A model of the kind torch users write: a stem, a ModuleList of blocks looped over, a
/// ModuleDict of heads, and a ParameterList of per-block scales.
struct Net {
    blocks: ModuleList,
    heads: ModuleDict,
    scales: ParameterList,
}

impl Net {
    fn new() -> Net {
        let mut blocks = ModuleList::new();
        let mut scales = ParameterList::new();
        for _ in 0..3 {
            blocks.push(nn::Linear::new(4, 4));
            scales.push(Parameter::new(Tensor::ones([1], CPU).unwrap()).unwrap());
        }
        let heads = ModuleDict::new()
            .insert("cls", nn::Linear::new(4, 2))
            .insert("reg", nn::Linear::new(4, 1));
        Net {
            blocks,
            heads,
            scales,
        }
    }
}

impl Module for Net {
    fn forward(&self, x: &Tensor) -> gpulab::error::Result<Tensor> {
        let mut h = x.clone();
        for (block, scale) in self.blocks.iter().zip(self.scales.iter()) {
            h = block.forward(&h)?.tanh()?.mul(&scale.tensor())?.add(&h)?;
        }
        self.heads.module("cls")?.forward(&h)
    }
    fn parameters(&self) -> Vec<Parameter> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        let part = |name: &str, m: &dyn Module| {
            m.named_parameters()
                .into_iter()
                .map(move |(n, p)| (format!("{name}.{n}"), p))
                .collect::<Vec<_>>()
        };
        [
            part("blocks", &self.blocks),
            part("heads", &self.heads),
            part("scales", &self.scales),
        ]
        .concat()
    }
    fn describe(&self) -> String {
        "Net".into()
    }
}

#[test]
fn a_model_built_on_the_containers_trains_and_reloads() {
    gpulab::manual_seed(1);
    let net = Net::new();
    let n = names(&net);
    assert_eq!(n.len(), 6 + 4 + 3);
    assert!(n.contains(&"blocks.2.weight".to_string()));
    assert!(n.contains(&"heads.reg.bias".to_string()));
    assert!(n.contains(&"scales.1".to_string()));
    let x = Tensor::randn([16, 4], CPU).unwrap();
    let y = x
        .sum_dim(1)
        .unwrap()
        .gt(0)
        .unwrap()
        .to_dtype(DType::I64)
        .unwrap();
    let mut opt = SGD::new(net.parameters(), 0.5);
    let loss = |m: &Net| F::cross_entropy(&m.forward(&x).unwrap(), &y).unwrap();
    let first = loss(&net).item::<f32>().unwrap();
    for _ in 0..20 {
        opt.zero_grad();
        loss(&net).backward().unwrap();
        opt.step().unwrap();
    }
    let last = loss(&net).item::<f32>().unwrap();
    assert!(last < first * 0.8, "loss {first} -> {last}");
    // Saved under those names, loaded into a fresh model: the same outputs.
    let dir = std::env::temp_dir().join(format!("gpulab-containers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("net.safetensors");
    nn::save_safetensors(&net, &path).unwrap();
    let fresh = Net::new();
    nn::load_safetensors(&fresh, &path).unwrap();
    assert!(fresh
        .forward(&x)
        .unwrap()
        .equal(&net.forward(&x).unwrap())
        .unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    // The unused head still moves with the model.
    net.to_dtype(DType::F64).unwrap();
    assert_eq!(
        net.heads.get("reg").unwrap().parameters()[0]
            .tensor()
            .dtype(),
        DType::F64
    );
}
