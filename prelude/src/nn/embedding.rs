//! `Embedding` (torch's `nn.Embedding`): a learnable table of vectors looked up by integer
//! index, the first layer of a network that reads words, tokens or categories.

use super::{functional, same_device, Module, Parameter};
use crate::device::Device;
use crate::error::Result;
use crate::tensor::Tensor;

/// `num_embeddings` vectors of `embedding_dim` numbers, starting as torch's: standard normal,
/// from the seeded generator. `forward` takes int64 or int32 indices of any shape and gives
/// `[*indices.shape, embedding_dim]`; only the rows that were read get a gradient.
pub struct Embedding {
    pub weight: Parameter,
    num_embeddings: usize,
    embedding_dim: usize,
}

impl Embedding {
    pub fn new(num_embeddings: usize, embedding_dim: usize) -> Embedding {
        let table = Tensor::randn(vec![num_embeddings, embedding_dim], Device::Cpu)
            .expect("normal values on the CPU");
        Embedding {
            weight: Parameter::new(table).expect("a float32 tensor can require grad"),
            num_embeddings,
            embedding_dim,
        }
    }
}

impl Module for Embedding {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        same_device(self, &self.weight, x)?;
        functional::embedding(x, &self.weight.tensor())
    }
    fn parameters(&self) -> Vec<Parameter> {
        vec![self.weight.clone()]
    }
    fn named_parameters(&self) -> Vec<(String, Parameter)> {
        vec![("weight".into(), self.weight.clone())]
    }
    fn describe(&self) -> String {
        format!("Embedding({}, {})", self.num_embeddings, self.embedding_dim)
    }
}
