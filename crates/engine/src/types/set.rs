//! SetValue: members, compact (listpack) while small, converting at Redis's thresholds.
use crate::listpack::Listpack;

#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    Listpack(Listpack),
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue::Listpack(Listpack::new())
    }
}

impl SetValue {
    pub fn len(&self) -> usize {
        match self {
            SetValue::Listpack(lp) => lp.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            SetValue::Listpack(_) => "listpack",
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            SetValue::Listpack(lp) => lp.heap_size(),
        }
    }
}
