//! The run-time values of Nabla programs: `int`, `float`, `bool`, `char` and `Tensor`, each float
//! or tensor possibly *tracked* by the autodiff tape.
//!
//! A [`Value`] is 24 bytes. Plain scalars are stored inline; a tensor is shared behind an `Rc`
//! (and its buffer is itself copy-on-write, see [`Tensor`]). A tracked value is a box around the
//! value it tracks, naming the node that recorded it ([`NodeRef`]: a differentiation level and a
//! serial number), as in HIPS autograd: a float tracked at one level only is the inline
//! [`Value::TrackedFloat`], so recording a scalar operation allocates nothing; anything else (a
//! tracked tensor, or a value tracked at several nested levels at once) is a [`Value::Tracked`]
//! box whose inner value may itself be tracked at a lower level. Levels strictly decrease inwards.
//!
//! This module knows the shape of values, not how they are recorded or differentiated: it never
//! touches the tape, and whether a box is still *live* (recorded on a tape that has not been
//! released) is for the tape to decide.

use std::fmt;
use std::rc::Rc;

use tensor::{ShapeText, Tensor, format_bool, format_char, format_float, format_int};

/// The node that recorded a tracked value: its differentiation level (0 is the program tape of
/// `var` and `backward`, 1 and up are the transforms `grad(f)`, `jvp(f)`, ... in nesting order)
/// and a serial number that is never reused on that level, so a box from a released recording is
/// recognisably stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeRef(u64);

impl NodeRef {
    const SERIAL_BITS: u32 = 48;
    const SERIAL_MASK: u64 = (1 << Self::SERIAL_BITS) - 1;
    /// The deepest level a node can name.
    pub const MAX_LEVEL: usize = (1 << (64 - Self::SERIAL_BITS)) - 1;
    /// The largest serial a node can carry; the tape refuses to record past it.
    pub const MAX_SERIAL: u64 = Self::SERIAL_MASK;

    /// The node `serial` on `level`; the tape keeps both within [`NodeRef::MAX_LEVEL`] and
    /// [`NodeRef::MAX_SERIAL`].
    pub(crate) fn new(level: usize, serial: u64) -> NodeRef {
        NodeRef(((level as u64) << Self::SERIAL_BITS) | (serial & Self::SERIAL_MASK))
    }

    pub fn level(self) -> usize {
        (self.0 >> Self::SERIAL_BITS) as usize
    }

    pub fn serial(self) -> u64 {
        self.0 & Self::SERIAL_MASK
    }
}

/// A value of a Nabla program.
///
/// The tag is a whole word (`repr(u64)`) so that every payload starts at offset 8: values are then
/// copied as three words, where a byte tag with `bool` and `char` payloads packed after it made the
/// compiler copy them byte range by byte range (and stall on every move). `Option<Value>` still
/// uses the tag's spare values and stays 24 bytes.
#[derive(Clone, Debug)]
#[repr(u64)]
pub enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
    Char(u8),
    /// An untracked tensor.
    Tensor(Rc<Tensor>),
    /// A float tracked at exactly one level (its inner value is the plain `value`).
    TrackedFloat {
        value: f64,
        node: NodeRef,
    },
    /// Any other tracked value: a tracked tensor, or a value tracked at several levels.
    Tracked(Rc<Tracked>),
}

/// The box of a [`Value::Tracked`]: the value one level down and the node at this level.
#[derive(Debug)]
pub struct Tracked {
    value: Value,
    node: NodeRef,
}

impl Tracked {
    pub(crate) fn new(value: Value, node: NodeRef) -> Tracked {
        Tracked { value, node }
    }

    /// The value this box tracks, which may itself be tracked at a lower level.
    pub fn value(&self) -> &Value {
        &self.value
    }

    pub fn node(&self) -> NodeRef {
        self.node
    }

    /// The inner value, without cloning when this box is not shared.
    pub(crate) fn into_value(this: Rc<Tracked>) -> Value {
        match Rc::try_unwrap(this) {
            Ok(tracked) => tracked.value,
            Err(shared) => shared.value.clone(),
        }
    }
}

/// The plain value underneath every box of a [`Value`], borrowed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Primal<'a> {
    Int(i64),
    Float(f64),
    Bool(bool),
    Char(u8),
    Tensor(&'a Tensor),
}

impl Value {
    /// An untracked tensor value.
    pub fn tensor(tensor: Tensor) -> Value {
        Value::Tensor(Rc::new(tensor))
    }

    /// The plain value under all boxes.
    pub fn primal(&self) -> Primal<'_> {
        let mut value = self;
        loop {
            match value {
                Value::Int(x) => return Primal::Int(*x),
                Value::Float(x) => return Primal::Float(*x),
                Value::Bool(x) => return Primal::Bool(*x),
                Value::Char(x) => return Primal::Char(*x),
                Value::Tensor(tensor) => return Primal::Tensor(tensor),
                Value::TrackedFloat { value, .. } => return Primal::Float(*value),
                Value::Tracked(tracked) => value = &tracked.value,
            }
        }
    }

    /// The same number or tensor with every box removed: a constant for every level.
    pub fn detach(&self) -> Value {
        match self.primal() {
            Primal::Int(x) => Value::Int(x),
            Primal::Float(x) => Value::Float(x),
            Primal::Bool(x) => Value::Bool(x),
            Primal::Char(x) => Value::Char(x),
            Primal::Tensor(tensor) => match self {
                Value::Tensor(shared) => Value::Tensor(shared.clone()),
                _ => Value::tensor(tensor.clone()),
            },
        }
    }

    /// Whether the value carries a box, live or not.
    pub fn is_tracked(&self) -> bool {
        matches!(self, Value::TrackedFloat { .. } | Value::Tracked(_))
    }

    /// Whether the primal is a `float` (tracked or not).
    pub fn is_float(&self) -> bool {
        matches!(self.primal(), Primal::Float(_))
    }

    /// Whether the primal is a tensor (tracked or not).
    pub fn is_tensor(&self) -> bool {
        matches!(self.primal(), Primal::Tensor(_))
    }

    /// Whether the value can be differentiated: a `float` or a tensor.
    pub fn is_differentiable(&self) -> bool {
        matches!(self.primal(), Primal::Float(_) | Primal::Tensor(_))
    }

    /// The number a scalar holds (`int`, `float`, `char`, `bool` as 0/1), or `None` for a tensor.
    pub fn as_f64(&self) -> Option<f64> {
        match self.primal() {
            // Integers beyond 2^53 round, as C's conversion does.
            Primal::Int(x) => Some(x as f64),
            Primal::Float(x) => Some(x),
            Primal::Bool(x) => Some(f64::from(u8::from(x))),
            Primal::Char(x) => Some(f64::from(x)),
            Primal::Tensor(_) => None,
        }
    }

    /// The primal tensor, if the value is one.
    pub fn as_tensor(&self) -> Option<&Tensor> {
        match self.primal() {
            Primal::Tensor(tensor) => Some(tensor),
            _ => None,
        }
    }

    /// The extents of a tensor's axes; a scalar has none.
    pub fn shape(&self) -> &[usize] {
        match self.primal() {
            Primal::Tensor(tensor) => tensor.shape(),
            _ => &[],
        }
    }

    /// The number of elements: 1 for a scalar (Nabla's `sizeof`).
    pub fn len(&self) -> usize {
        match self.primal() {
            Primal::Tensor(tensor) => tensor.len(),
            _ => 1,
        }
    }

    /// Whether the value is a tensor without elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The truth of a condition, as in C: non-zero numbers are true. A tensor is a condition only
    /// when it has rank 0 (the checker rejects the others statically).
    pub fn truth(&self) -> Option<bool> {
        match self.primal() {
            Primal::Bool(x) => Some(x),
            Primal::Int(x) => Some(x != 0),
            Primal::Char(x) => Some(x != 0),
            // NaN is non-zero, so it is true, as in C.
            Primal::Float(x) => Some(x != 0.0),
            Primal::Tensor(tensor) if tensor.rank() == 0 => {
                tensor.to_scalar().ok().map(|x| x != 0.0)
            }
            Primal::Tensor(_) => None,
        }
    }

    /// The type as Nabla writes it in messages: `float`, `Tensor[2][3]`, ...
    pub fn type_name(&self) -> String {
        match self.primal() {
            Primal::Int(_) => "int".to_owned(),
            Primal::Float(_) => "float".to_owned(),
            Primal::Bool(_) => "bool".to_owned(),
            Primal::Char(_) => "char".to_owned(),
            Primal::Tensor(tensor) => ShapeText(tensor.shape()).to_string(),
        }
    }
}

/// Prints the primal the way Nabla's `print` does (language.md 7.1).
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.primal() {
            Primal::Int(x) => f.write_str(&format_int(x)),
            Primal::Float(x) => f.write_str(&format_float(x)),
            Primal::Bool(x) => f.write_str(&format_bool(x)),
            Primal::Char(x) => f.write_str(&format_char(x)),
            Primal::Tensor(tensor) => write!(f, "{tensor}"),
        }
    }
}

impl From<Tensor> for Value {
    fn from(tensor: Tensor) -> Value {
        Value::tensor(tensor)
    }
}

impl From<f64> for Value {
    fn from(value: f64) -> Value {
        Value::Float(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_small() {
        assert!(size_of::<Value>() <= 24, "{}", size_of::<Value>());
        assert_eq!(size_of::<Option<Value>>(), size_of::<Value>());
    }

    #[test]
    fn node_refs_pack_level_and_serial() {
        let node = NodeRef::new(3, 12345);
        assert_eq!((node.level(), node.serial()), (3, 12345));
        let last = NodeRef::new(NodeRef::MAX_LEVEL, NodeRef::MAX_SERIAL);
        assert_eq!((last.level(), last.serial()), (NodeRef::MAX_LEVEL, NodeRef::MAX_SERIAL));
    }

    #[test]
    fn primal_and_detach_see_through_boxes() {
        let inner = Value::TrackedFloat { value: 2.5, node: NodeRef::new(0, 7) };
        let outer = Value::Tracked(Rc::new(Tracked::new(inner, NodeRef::new(2, 1))));
        assert_eq!(outer.primal(), Primal::Float(2.5));
        assert!(outer.is_tracked() && outer.is_float());
        assert!(matches!(outer.detach(), Value::Float(x) if x == 2.5));
        assert_eq!(outer.to_string(), "2.5");
        let tensor = Value::tensor(Tensor::vector(vec![1.0, 2.0]));
        assert_eq!(
            (tensor.shape(), tensor.len(), tensor.type_name()),
            (&[2][..], 2, "Tensor[2]".into())
        );
    }

    #[test]
    fn conditions_follow_c() {
        assert_eq!(Value::Float(f64::NAN).truth(), Some(true));
        assert_eq!(Value::Int(0).truth(), Some(false));
        assert_eq!(Value::tensor(Tensor::scalar(1.0)).truth(), Some(true));
        assert_eq!(Value::tensor(Tensor::vector(vec![1.0])).truth(), None);
    }
}
