//! Tests of the tensor-algebra engine against naive nested-loop references, brute-force path
//! search and central finite differences.
//!
//! Inputs of the value tests are small integers, so every sum is exact in `f64` whatever order
//! BLAS adds in, and results are compared with `assert_eq!`.

use std::collections::BTreeSet;

use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn, s};

use super::{Contraction, EinsumError, EinsumSpec, PathStrategy, PlanConfig, backward, einsum};

/// A small deterministic generator (xorshift64*), so tests need no random-number crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// An integer in `-3..=3`, as a float.
    fn small_int(&mut self) -> f64 {
        self.below(7) as f64 - 3.0
    }

    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    fn integers(&mut self, shape: &[usize]) -> ArrayD<f64> {
        ArrayD::from_shape_simple_fn(IxDyn(shape), || self.small_int())
    }

    fn floats(&mut self, shape: &[usize]) -> ArrayD<f64> {
        ArrayD::from_shape_simple_fn(IxDyn(shape), || self.uniform())
    }
}

/// The naive definition: visit every assignment of every label and add the product of the
/// operands' entries into the output entry it names.
fn reference(
    operands: &[Vec<usize>],
    output: &[usize],
    factor: f64,
    extents: &[usize],
    inputs: &[ArrayViewD<'_, f64>],
) -> ArrayD<f64> {
    let output_shape: Vec<usize> = output.iter().map(|&label| extents[label]).collect();
    let mut result = ArrayD::zeros(IxDyn(&output_shape));
    if extents.contains(&0) {
        return result;
    }
    // Each tensor is read through row-major offsets: a label's stride is the sum of the strides of
    // the axes it labels.
    let label_strides = |labels: &[usize], shape: &[usize]| {
        let mut strides = vec![0usize; extents.len()];
        let mut stride = 1;
        for (axis, &label) in labels.iter().enumerate().rev() {
            strides[label] += stride;
            stride *= shape[axis];
        }
        strides
    };
    let data: Vec<Vec<f64>> = inputs.iter().map(|input| input.iter().copied().collect()).collect();
    let input_strides: Vec<Vec<usize>> = operands
        .iter()
        .zip(inputs)
        .map(|(labels, input)| label_strides(labels, input.shape()))
        .collect();
    let output_strides = label_strides(output, &output_shape);
    let offset = |strides: &[usize], assignment: &[usize]| -> usize {
        strides.iter().zip(assignment).map(|(stride, index)| stride * index).sum()
    };
    let output_data = result.as_slice_mut().expect("fresh arrays are row-major");
    let mut assignment = vec![0usize; extents.len()];
    loop {
        let mut term = factor;
        for (values, strides) in data.iter().zip(&input_strides) {
            term *= values[offset(strides, &assignment)];
        }
        output_data[offset(&output_strides, &assignment)] += term;
        // Advance the odometer; when every digit wraps, every assignment has been visited.
        let mut digit = 0;
        loop {
            if digit == extents.len() {
                return result;
            }
            assignment[digit] += 1;
            if assignment[digit] < extents[digit] {
                break;
            }
            assignment[digit] = 0;
            digit += 1;
        }
    }
}

/// Splits an explicit spec (`"ik,kj->ij"`) into label ids, independently of the engine's parser.
fn label_ids(spec: &str) -> (Vec<Vec<usize>>, Vec<usize>, Vec<char>) {
    let spec: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
    let (inputs, output) = spec.split_once("->").expect("test specs are explicit");
    let mut letters: Vec<char> = Vec::new();
    let mut id = |c: char| match letters.iter().position(|&known| known == c) {
        Some(index) => index,
        None => {
            letters.push(c);
            letters.len() - 1
        }
    };
    let operands: Vec<Vec<usize>> = match inputs.is_empty() {
        true => vec![Vec::new()],
        false => inputs.split(',').map(|term| term.chars().map(&mut id).collect()).collect(),
    };
    let output = output.chars().map(&mut id).collect();
    (operands, output, letters)
}

/// Default extents: small and mixed, so that transposition mistakes change shapes.
fn small_extent(c: char) -> usize {
    [2, 3, 4, 2, 3][(c as usize) % 5]
}

/// Extents past ndarray's cut-off below which it skips BLAS.
fn blas_extent(c: char) -> usize {
    [9, 11, 10, 12, 8][(c as usize) % 5]
}

/// Networks with thick bonds (`a` to `h`, past the BLAS cut-off) and thin open legs, so the
/// reference stays quick.
fn bond_extent(c: char) -> usize {
    match c {
        'a'..='h' => [9, 10, 11][(c as usize) % 3],
        _ => [2, 3][(c as usize) % 2],
    }
}

/// Runs `spec` on random integer tensors with every path strategy and compares with the reference.
fn check_with(spec: &str, extent: fn(char) -> usize, factor: f64, seed: u64) {
    let (operands, output, letters) = label_ids(spec);
    let extents: Vec<usize> = letters.iter().map(|&c| extent(c)).collect();
    let mut rng = Rng(seed);
    let inputs: Vec<ArrayD<f64>> = operands
        .iter()
        .map(|labels| rng.integers(&labels.iter().map(|&l| extents[l]).collect::<Vec<_>>()))
        .collect();
    let views: Vec<ArrayViewD<'_, f64>> = inputs.iter().map(|input| input.view()).collect();
    let expected = reference(&operands, &output, factor, &extents, &views);
    let contraction = Contraction::from_spec(spec).unwrap().scaled(factor);
    let shapes: Vec<&[usize]> = views.iter().map(|view| view.shape()).collect();
    for strategy in [PathStrategy::Auto, PathStrategy::Optimal, PathStrategy::Greedy] {
        let config = PlanConfig { strategy, ..PlanConfig::default() };
        let plan = contraction.plan_with(&shapes, &config).unwrap();
        let result = plan.execute(&views).unwrap();
        assert_eq!(result, expected, "{spec} with {strategy:?}, path {:?}", plan.path());
        assert!(result.is_standard_layout(), "{spec}: result is not row-major");
    }
}

fn check(spec: &str) {
    check_with(spec, small_extent, 1.0, 7);
}

fn check_blas(spec: &str) {
    check_with(spec, blas_extent, 1.0, 11);
}

#[test]
fn matmul_and_matrix_products() {
    for spec in ["ik,kj->ij", "ik,jk->ij", "ki,kj->ij", "ki,jk->ji", "i,i->", "ij,j->i", "i,ij->j"]
    {
        check(spec);
        check_blas(spec);
    }
}

#[test]
fn single_operand_operations() {
    let specs = [
        "ij->ji",
        "ijk->kij",
        "ijk->jki",
        "ij->ij",
        "ii->i",
        "ii->",
        "iii->i",
        "ij->",
        "ij->i",
        "ij->j",
        "iij->j",
        "iji->ij",
        "cac->a",
        "bb->",
        "acada->cd",
        "adaca->cd",
        "->",
        "i->i",
    ];
    for spec in specs {
        check(spec);
        check_blas(spec);
    }
}

#[test]
fn elementwise_and_outer_products() {
    let specs = [
        "ij,ij->ij",
        "ij,ji->ij",
        "bac,cba->abc",
        "i,j->ij",
        "i,j->ji",
        "ij,k->ikj",
        "ij,->ij",
        ",ij->ji",
        ",->",
        "ac,cb->abc",
        "dba,ac->abcd",
        "ij,ij,ij->ij",
    ];
    for spec in specs {
        check(spec);
        check_blas(spec);
    }
}

#[test]
fn contractions_and_networks() {
    let specs = [
        "kcjd,cild->ijkl",
        "kcjd,dicl->ijkl",
        "ia,ajb,bkc,cl->ijkl",
        "ia,ab,bl->il",
        "ab,bc,cd,da->",
        "iab,jbc,kcd,lda->ijkl",
        "ijd,d,dkl->ijkl",
        "bij,bjk->bik",
        "bi,bi->b",
        "bij,bjk->ikb",
        "ij,ij->",
        "ij,ij,ij->",
        "ab,ab,ab->ab",
        "ijk,jkl,klm,lmi->",
        "ab,cd->",
        "ai,bi,ci->abc",
        "ij,jk,kl,lm,mn,no,op,pq,qr,rs->is",
        "ab,bc,ca,ad,db,dc->",
    ];
    for spec in specs {
        check(spec);
    }
    for spec in ["ia,ajb,bkc,cl->ijkl", "bij,bjk->bik", "bi,bi->b", "iab,jbc,kcd,lda->ijkl"] {
        check_with(spec, bond_extent, 1.0, 13);
    }
    for spec in ["bij,bjk->bik", "bi,bi->b", "ijd,d,dkl->ijkl", "ab,ab,ab->ab"] {
        check_blas(spec);
    }
}

#[test]
fn repeated_labels_with_other_operands() {
    for spec in ["ii,i->i", "iij,jk->ik", "ij,jj->ij", "aab,bcc->ac", "ii,jj->ij", "iij,jii->"] {
        check(spec);
        check_blas(spec);
    }
}

#[test]
fn scalar_factor_is_applied_once() {
    for spec in ["ik,kj->ij", "ij->ji", "ij,ij->ij", "ia,ajb,bkc,cl->ijkl", "ii->", "ij->ij", ",->"]
    {
        check_with(spec, small_extent, 0.5, 3);
        check_with(spec, small_extent, -2.0, 5);
    }
}

#[test]
fn random_networks_match_the_reference() {
    let mut rng = Rng(2024);
    let pool = ['a', 'b', 'c', 'd', 'e', 'f'];
    for case in 0..300 {
        let operand_count = 1 + rng.below(5);
        let operands: Vec<String> = (0..operand_count)
            .map(|_| (0..rng.below(4)).map(|_| pool[rng.below(pool.len())]).collect())
            .collect();
        let mut present: Vec<char> = operands.iter().flat_map(|term| term.chars()).collect();
        present.sort();
        present.dedup();
        let output: String = present.into_iter().filter(|_| rng.below(2) == 0).rev().collect();
        let spec = format!("{}->{output}", operands.join(","));
        check_with(&spec, small_extent, 1.0, case);
    }
}

#[test]
fn index_statement_front_end() {
    // C(i,j) += 0.5 * A(i,k) * B(k,j), with identifiers as labels.
    let contraction =
        Contraction::from_labels(&[&["row", "k"][..], &["k", "col"]], &["row", "col"], 0.5)
            .unwrap();
    assert_eq!(contraction.to_string(), "0.5 * (row,k),(k,col)->(row,col)");
    let a = ndarray::array![[1.0, 2.0], [3.0, 4.0]].into_dyn();
    let b = ndarray::array![[5.0, 6.0], [7.0, 8.0]].into_dyn();
    let c = contraction.execute(&[a.view(), b.view()]).unwrap();
    assert_eq!(c, ndarray::array![[9.5, 11.0], [21.5, 25.0]].into_dyn());
    let owned: Vec<Vec<String>> = vec![vec!["i".into(), "i".into()]];
    let trace = Contraction::from_labels(&owned, &[] as &[String], 1.0).unwrap();
    assert_eq!(trace.execute(&[a.view()]).unwrap(), ndarray::arr0(5.0).into_dyn());
}

#[test]
fn zero_operands_give_the_factor() {
    let contraction = Contraction::from_labels(&[] as &[&[&str]], &[] as &[&str], 2.5).unwrap();
    assert_eq!(contraction.execute(&[]).unwrap(), ndarray::arr0(2.5).into_dyn());
}

#[test]
fn implicit_output_follows_numpy() {
    let cases = [
        ("ij,jk", "ij,jk->ik"),
        ("ba", "ba->ab"),
        ("ii", "ii->"),
        ("ij,ij", "ij,ij->"),
        ("aB,c", "aB,c->Bac"),
        (" i j , j k ", "ij,jk->ik"),
        ("i,i,i", "i,i,i->"),
    ];
    for (implicit, explicit) in cases {
        assert_eq!(Contraction::from_spec(implicit).unwrap().to_string(), explicit);
    }
    let a = ndarray::array![[1.0, 2.0], [3.0, 4.0]].into_dyn();
    assert_eq!(einsum("ba", &[a.view()]).unwrap(), a.t().to_owned());
    assert_eq!(einsum("ii", &[a.view()]).unwrap(), ndarray::arr0(5.0).into_dyn());
}

#[test]
fn whitespace_is_ignored() {
    check("ik, kj -> ij");
    let parsed: Contraction = " ik ,kj->  ij".parse().unwrap();
    assert_eq!(parsed.to_string(), "ik,kj->ij");
}

#[test]
fn zero_extents_give_zeros() {
    let a = ArrayD::<f64>::zeros(IxDyn(&[2, 0]));
    let b = ArrayD::<f64>::zeros(IxDyn(&[0, 3]));
    assert_eq!(einsum("ij,jk->ik", &[a.view(), b.view()]).unwrap(), ArrayD::zeros(IxDyn(&[2, 3])));
    assert_eq!(einsum("ij->ji", &[a.view()]).unwrap(), ArrayD::zeros(IxDyn(&[0, 2])));
    assert_eq!(einsum("ij->", &[a.view()]).unwrap(), ndarray::arr0(0.0).into_dyn());
}

#[test]
fn oversized_results_are_errors() {
    // Broadcast views of one element stand in for huge operands without allocating them.
    let one = ArrayD::<f64>::ones(IxDyn(&[1]));
    let huge = one.broadcast(IxDyn(&[1 << 40])).unwrap();
    let empty = ArrayD::<f64>::zeros(IxDyn(&[0]));
    let message = "a tensor of shape [1099511627776, 1099511627776] would have more elements than \
                   memory can hold";
    assert_eq!(einsum("i,j->ij", &[huge.view(), huge.view()]).unwrap_err().to_string(), message);
    let error = einsum("i,j,k->jki", &[empty.view(), huge.view(), huge.view()]).unwrap_err();
    assert_eq!(error, EinsumError::TooLarge { shape: vec![1 << 40, 1 << 40, 0] });
}

#[test]
fn strided_and_transposed_inputs() {
    let mut rng = Rng(99);
    let base = rng.integers(&[10, 12]);
    let other = rng.integers(&[12, 9]);
    let transposed = base.t();
    let reversed = base.slice(s![..;-1, 1..;2]).into_dyn();
    let specs = ["ij,jk->ik", "ij->ji", "ij,ij->", "ii->i", "ij,kj->ik"];
    for (input, name) in [(transposed.view().into_dyn(), "transposed"), (reversed, "reversed")] {
        for spec in specs {
            let (operands, output, letters) = label_ids(spec);
            let second = match operands.len() {
                1 => None,
                _ if spec == "ij,ij->" => Some(input.to_owned()),
                _ => Some(other.slice(s![..input.shape()[1], ..]).to_owned().into_dyn()),
            };
            let second = match (spec, second) {
                ("ij,kj->ik", Some(second)) => Some(second.t().to_owned()),
                (_, second) => second,
            };
            let mut views = vec![input.view()];
            views.extend(second.iter().map(|array| array.view()));
            if spec == "ii->i" {
                let square = input.shape()[0].min(input.shape()[1]);
                views[0] = input.slice(s![..square, ..square]).into_dyn();
            }
            let mut extents = vec![0; letters.len()];
            for (labels, view) in operands.iter().zip(&views) {
                for (&label, &extent) in labels.iter().zip(view.shape()) {
                    extents[label] = extent;
                }
            }
            let expected = reference(&operands, &output, 1.0, &extents, &views);
            assert_eq!(einsum(spec, &views).unwrap(), expected, "{spec} on a {name} input");
        }
    }
}

fn error_of(spec: &str, shapes: &[&[usize]]) -> String {
    let arrays: Vec<ArrayD<f64>> = shapes.iter().map(|shape| ArrayD::zeros(IxDyn(shape))).collect();
    let views: Vec<ArrayViewD<'_, f64>> = arrays.iter().map(|array| array.view()).collect();
    match einsum(spec, &views) {
        Ok(_) => panic!("{spec} should fail"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn error_messages() {
    let cases: [(&str, &[&[usize]], &str); 14] = [
        ("ik,kj->ij", &[&[2, 3], &[4, 2]], "label k is 3 in operand 1 but 4 in operand 2"),
        (
            "ij,jk,kl->il",
            &[&[2, 3], &[3, 4], &[5, 2]],
            "label k is 4 in operand 2 but 5 in operand 3",
        ),
        ("ii->i", &[&[2, 3]], "label i is 2 at axis 0 but 3 at axis 1 of operand 1"),
        ("ij,jk->ik", &[&[2, 3]], "the contraction has 2 operands but 1 tensor was given"),
        ("ij->i", &[&[2, 3], &[3]], "the contraction has 1 operand but 2 tensors were given"),
        ("ij->i", &[&[2]], "operand 1 has 2 labels but its tensor has rank 1"),
        ("i,j->ij", &[&[2], &[]], "operand 2 has 1 label but its tensor has rank 0"),
        ("ij->ii", &[&[2, 2]], "output label i appears more than once"),
        ("ij->k", &[&[2, 2]], "output label k does not appear in any operand"),
        (
            "i$j",
            &[&[2, 2]],
            "invalid character '$' at position 1 of the einsum spec; labels are ASCII letters",
        ),
        (
            "i-j",
            &[&[2, 2]],
            "invalid character '-' at position 1 of the einsum spec; labels are ASCII letters",
        ),
        (
            "ij,jk->i,k",
            &[&[2, 2]],
            "invalid character ',' at position 8 of the einsum spec; labels are ASCII letters",
        ),
        (
            "i.j",
            &[&[2, 2]],
            "the '.' at position 1 of the einsum spec is not part of an ellipsis '...'",
        ),
        (
            "i->i->i",
            &[&[2]],
            "the einsum spec has a second '->' at position 4; it may have only one",
        ),
    ];
    for (spec, shapes, message) in cases {
        assert_eq!(error_of(spec, shapes), message, "{spec}");
    }
}

/// Operand `operand` of the NumPy comparisons: element `k` (row-major) is
/// `(k * (operand + 2) + operand) % 7 - 3`, so that each operand differs.
fn numpy_input(operand: usize, shape: &[usize]) -> ArrayD<f64> {
    let count: usize = shape.iter().product();
    let values = (0..count).map(|k| ((k * (operand + 2) + operand) % 7) as f64 - 3.0).collect();
    ArrayD::from_shape_vec(IxDyn(shape), values).expect("the count is the shape's")
}

#[test]
fn ellipsis_specs_match_numpy() {
    // Expected shapes and values computed once with NumPy 2.4's `np.einsum` on `numpy_input`.
    type Case = (&'static str, &'static [&'static [usize]], &'static [usize], &'static [f64]);
    let cases: &[Case] = &[
        (
            "...ij,...jk->...ik",
            &[&[2, 3, 4], &[2, 4, 2]],
            &[2, 3, 2],
            &[18., -10., 4., 2., 4., 0., 5., -1., 3., 2., 1., -16.],
        ),
        // Batch axes [2, 1] and [3] broadcast to [2, 3].
        (
            "...ij,...jk->...ik",
            &[&[2, 1, 2, 3], &[3, 3, 2]],
            &[2, 3, 2, 2],
            &[
                12., -4., 0., 3., -7., 12., 4., 0., 2., -7., 1., 4., 2., 3., -17., 3., 1., 2., 5.,
                -17., 7., 1., -1., 5.,
            ],
        ),
        ("...ij,...jk->...ik", &[&[2, 3], &[3, 2]], &[2, 2], &[12., -4., 0., 3.]),
        ("...ii->...i", &[&[2, 3, 3]], &[2, 3], &[-3., -2., -1., 1., 2., 3.]),
        ("i...->...", &[&[3, 2, 2]], &[2, 2], &[-6., 0., 6., -2.]),
        ("...i,...i", &[&[2, 3], &[2, 3]], &[2], &[2., -6.]),
        ("...i,...i", &[&[2, 3], &[1, 3]], &[2], &[2., -8.]),
        // Every operand has extent 1 there, so the axis stays.
        ("...i,...i->...i", &[&[1, 3], &[1, 3]], &[1, 3], &[6., -1., -3.]),
        // Implicit output: the `...` axes, then the letters that occur once, sorted.
        (
            "ba...,...",
            &[&[3, 2, 2], &[2]],
            &[2, 2, 3],
            &[6., 4., 2., -2., -4., -6., -1., 0., 1., 3., -3., -2.],
        ),
        (
            "...j,i...",
            &[&[2, 3], &[4, 2]],
            &[2, 4, 3],
            &[
                6., 2., -2., 9., 3., -3., -9., -3., 3., -6., -2., 2., 3., -2., 0., 0., 0., 0., -3.,
                2., 0., -6., 4., 0.,
            ],
        ),
        (
            "j...,...i->i...j",
            &[&[2, 3], &[3, 2]],
            &[2, 3, 2],
            &[6., -6., 3., 6., 3., 0., -3., 3., 0., 0., -1., 0.],
        ),
        ("ij->...ij", &[&[2, 3]], &[2, 3], &[-3., -1., 1., 3., -2., 0.]),
        ("...", &[&[2, 2]], &[2, 2], &[-3., -1., 1., 3.]),
        ("...ij->ij", &[&[3, 2]], &[3, 2], &[-3., -1., 1., 3., -2., 0.]),
        ("i...i", &[&[3, 2, 3]], &[2], &[-9., 9.]),
        ("...,...", &[&[2, 3], &[3]], &[2, 3], &[6., -1., -3., -6., -2., 0.]),
        (
            "a...c, ...cb -> ...ab",
            &[&[2, 1, 3], &[4, 3, 2]],
            &[4, 2, 2],
            &[12., -4., 0., 3., -7., 12., 4., 0., 2., -7., 1., 4., -10., 2., 5., 1.],
        ),
        // An extent of 1 stretches to 0 as well.
        ("...i,...i->...", &[&[0, 3], &[1, 3]], &[0], &[]),
    ];
    for &(spec, shapes, shape, values) in cases {
        let inputs: Vec<ArrayD<f64>> =
            shapes.iter().enumerate().map(|(k, shape)| numpy_input(k, shape)).collect();
        let views: Vec<ArrayViewD<'_, f64>> = inputs.iter().map(|input| input.view()).collect();
        let result = einsum(spec, &views).unwrap_or_else(|error| panic!("{spec}: {error}"));
        assert_eq!(result.shape(), shape, "{spec} on {shapes:?}");
        assert_eq!(result.iter().copied().collect::<Vec<f64>>(), values, "{spec} on {shapes:?}");
    }
}

#[test]
fn ellipsis_expands_into_fresh_letters() {
    let expand = |spec: &str, shapes: &[&[usize]]| {
        let expansion = EinsumSpec::parse(spec).unwrap().expand(shapes).unwrap();
        (expansion.contraction.to_string(), expansion.dropped_axes)
    };
    assert_eq!(
        expand("...ij,...jk->...ik", &[&[5, 2, 3, 4], &[2, 4, 6]]),
        ("abij,bjk->abik".to_owned(), vec![vec![], vec![]])
    );
    // Extent-1 axes that broadcast against longer ones are dropped from their operands.
    assert_eq!(
        expand("...ij,...jk", &[&[5, 1, 3, 4], &[2, 4, 6]]),
        ("aij,bjk->abik".to_owned(), vec![vec![1], vec![]])
    );
    assert_eq!(
        expand("...i,...i", &[&[1, 3], &[4, 3]]),
        ("i,ai->a".to_owned(), vec![vec![0], vec![]])
    );
    assert_eq!(expand("...a", &[&[2, 3]]), ("ba->ba".to_owned(), vec![vec![]]));
    // Without `...` the spec is one contraction for every shape.
    assert_eq!(
        expand("ba,ac", &[&[2, 3], &[3, 4]]),
        ("ba,ac->bc".to_owned(), vec![vec![], vec![]])
    );
    assert_eq!(
        Contraction::from_spec("ij->...ji").unwrap().to_string(),
        "ij->ji",
        "a `...` in the output alone stands for no axes"
    );
}

#[test]
fn ellipsis_error_messages() {
    let letters: String = ('a'..='z').collect();
    let capitals: String = ('A'..='Z').collect();
    let too_many = format!("{letters},{capitals},...");
    let cases: [(&str, &[&[usize]], &str); 12] = [
        ("...ijk", &[&[2, 3]], "operand 1 has 3 labels besides '...' but its tensor has rank 2"),
        (
            "i,...i->...",
            &[&[2], &[]],
            "operand 2 has 1 label besides '...' but its tensor has rank 0",
        ),
        (
            "...ij,...jk->...ik",
            &[&[5, 3, 3, 4], &[2, 4, 5]],
            "'...' is [5, 3] in operand 1 but [2] in operand 2, which do not broadcast (3 \
             against 2)",
        ),
        (
            "...i,...i,...i",
            &[&[1, 3], &[4, 3], &[5, 3]],
            "'...' is [4] in operand 2 but [5] in operand 3, which do not broadcast (4 against 5)",
        ),
        (
            "...ij,...jk->ik",
            &[&[2, 3, 4], &[2, 4, 5]],
            "the output has no '...' but the operands' '...' stands for 1 axis of shape [2]; write \
             '...' in the output to keep them, or labels to sum them",
        ),
        (
            "i...->",
            &[&[1, 1, 3]],
            "the output has no '...' but the operands' '...' stands for 2 axes of shape [1, 3]; \
             write '...' in the output to keep them, or labels to sum them",
        ),
        (
            &too_many,
            &[&[1; 26], &[1; 26], &[1]],
            "the einsum spec needs 53 labels, 52 letters and 1 axis for '...', but there are only \
             52 ASCII letters",
        ),
        (
            "..ij",
            &[&[2, 2]],
            "the '.' at position 0 of the einsum spec is not part of an ellipsis '...'",
        ),
        (
            ". ..ij",
            &[&[2, 2]],
            "the '.' at position 0 of the einsum spec is not part of an ellipsis '...'",
        ),
        (
            "......ij",
            &[&[2, 2]],
            "the einsum spec has a second '...' in operand 1 at position 3; each operand and the \
             output may have one",
        ),
        (
            "i,...i->...i...",
            &[&[2], &[2]],
            "the einsum spec has a second '...' in the output at position 12; each operand and the \
             output may have one",
        ),
        ("...ij,...jk->...ik", &[&[2, 3]], "the contraction has 2 operands but 1 tensor was given"),
    ];
    for (spec, shapes, message) in cases {
        assert_eq!(error_of(spec, shapes), message, "{spec}");
    }
    assert_eq!(
        Contraction::from_spec("ij,...jk").unwrap_err().to_string(),
        "the einsum spec uses '...' at position 3, which stands for axes that depend on the \
         operands' ranks; expand it for their shapes"
    );
}

#[test]
fn error_values_carry_their_data() {
    let error = Contraction::from_labels(&[&["i", "k"][..], &["k", "j"]], &["i", "j"], 1.0)
        .unwrap()
        .plan(&[&[2usize, 3][..], &[4, 5]])
        .unwrap_err();
    let EinsumError::ExtentMismatch { label, first, second } = error else {
        panic!("expected an extent mismatch, got {error:?}");
    };
    assert_eq!(
        (label.as_str(), first.axis, first.extent, second.axis, second.extent),
        ("k", 1, 3, 0, 4)
    );
    let missing = Contraction::from_labels(&[&["i", "k"][..]], &["i", "j"], 1.0).unwrap_err();
    assert_eq!(missing.to_string(), "output label j does not appear in any operand");
}

#[test]
fn plan_and_gradient_errors() {
    let contraction = Contraction::from_spec("ij->i").unwrap();
    let plan = contraction.plan(&[&[2usize, 3][..]]).unwrap();
    let wrong = ArrayD::<f64>::zeros(IxDyn(&[2, 4]));
    assert_eq!(
        plan.execute(&[wrong.view()]).unwrap_err().to_string(),
        "operand 1 has shape [2, 4] but the plan was made for shape [2, 3]"
    );
    assert_eq!(
        contraction.gradient(1).unwrap_err().to_string(),
        "operand 2 is out of range: the contraction has 1 operand"
    );
    let gradient = contraction.gradient(0).unwrap();
    assert_eq!(gradient.to_string(), "i->ij");
    assert_eq!(
        gradient.plan(&[&[2usize][..]]).unwrap_err().to_string(),
        "output label j appears in no operand, so an output shape must give its extent"
    );
    let config = PlanConfig { output_shape: Some(&[3, 3]), ..PlanConfig::default() };
    assert_eq!(
        gradient.plan_with(&[&[2usize][..]], &config).unwrap_err().to_string(),
        "label i is 2 in operand 1 but 3 in the output"
    );
    let config = PlanConfig { output_shape: Some(&[2]), ..PlanConfig::default() };
    assert_eq!(
        gradient.plan_with(&[&[2usize][..]], &config).unwrap_err().to_string(),
        "the output has 2 labels but the requested output shape has rank 1"
    );
}

/// The cheapest sequence of pairwise contractions, by trying every one, in the planner's cost
/// model: labels only one operand carries are summed first, and each step costs the product of
/// the extents of every label involved, doubled when a label is summed.
fn brute_force_cost(spec: &str, extent: impl Fn(char) -> usize) -> f64 {
    let (operands, output, letters) = label_ids(spec);
    let extents: Vec<f64> = letters.iter().map(|&c| extent(c) as f64).collect();
    let output: BTreeSet<usize> = output.into_iter().collect();
    let needed = |label: usize, others: &[BTreeSet<usize>]| {
        output.contains(&label) || others.iter().any(|labels| labels.contains(&label))
    };
    let sets: Vec<BTreeSet<usize>> =
        operands.iter().map(|labels| labels.iter().copied().collect()).collect();
    let prepared: Vec<BTreeSet<usize>> = (0..sets.len())
        .map(|i| {
            let others: Vec<BTreeSet<usize>> =
                sets.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, s)| s.clone()).collect();
            sets[i].iter().copied().filter(|&label| needed(label, &others)).collect()
        })
        .collect();
    fn search(tensors: Vec<BTreeSet<usize>>, output: &BTreeSet<usize>, extents: &[f64]) -> f64 {
        let mut best = if tensors.len() < 2 { 0.0 } else { f64::INFINITY };
        for i in 0..tensors.len() {
            for j in i + 1..tensors.len() {
                let rest: Vec<BTreeSet<usize>> = tensors
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| k != i && k != j)
                    .map(|(_, labels)| labels.clone())
                    .collect();
                let union: BTreeSet<usize> = tensors[i].union(&tensors[j]).copied().collect();
                let result: BTreeSet<usize> = union
                    .iter()
                    .copied()
                    .filter(|label| {
                        output.contains(label) || rest.iter().any(|t| t.contains(label))
                    })
                    .collect();
                let size: f64 = union.iter().map(|&label| extents[label]).product();
                let cost = size * if result.len() < union.len() { 2.0 } else { 1.0 };
                let mut next = rest;
                next.push(result);
                best = best.min(cost + search(next, output, extents));
            }
        }
        best
    }
    search(prepared, &output, &extents)
}

fn plan_cost(spec: &str, extent: fn(char) -> usize, strategy: PathStrategy) -> f64 {
    let (operands, _, letters) = label_ids(spec);
    let shapes: Vec<Vec<usize>> = operands
        .iter()
        .map(|labels| labels.iter().map(|&l| extent(letters[l])).collect())
        .collect();
    let config = PlanConfig { strategy, ..PlanConfig::default() };
    Contraction::from_spec(spec).unwrap().plan_with(&shapes, &config).unwrap().path().cost()
}

/// A ring whose bonds alternate between thin and thick, where the left-to-right order is poor.
fn ring_extent(c: char) -> usize {
    match c {
        'a' | 'c' => 100,
        'b' | 'd' => 2,
        _ => 8,
    }
}

#[test]
fn ring_networks_get_the_optimal_path() {
    for spec in ["ab,bc,cd,da->", "iab,jbc,kcd,lda->ijkl", "ab,bc,cd,da->ac", "iab,jbc,kcd,lda->"] {
        for extent in [ring_extent as fn(char) -> usize, small_extent, blas_extent, bond_extent] {
            let optimum = brute_force_cost(spec, extent);
            assert_eq!(plan_cost(spec, extent, PathStrategy::Auto), optimum, "{spec}");
        }
    }
    // The optimum sums the thick bonds first, (ab,da)->bd and (bc,cd)->bd at 2 * 100 * 2 * 2
    // flops each, then 2 * 2 * 2 for the last step; left to right would cost 80400.
    assert_eq!(plan_cost("ab,bc,cd,da->", ring_extent, PathStrategy::Auto), 1608.0);
    check_with("ab,bc,cd,da->", ring_extent, 1.0, 1);
}

#[test]
fn optimal_paths_match_brute_force_on_random_networks() {
    let mut rng = Rng(77);
    let pool = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    for _ in 0..60 {
        let operand_count = 2 + rng.below(4);
        let operands: Vec<String> = (0..operand_count)
            .map(|_| (0..1 + rng.below(3)).map(|_| pool[rng.below(pool.len())]).collect())
            .collect();
        let mut present: Vec<char> = operands.iter().flat_map(|term| term.chars()).collect();
        present.sort();
        present.dedup();
        let output: String = present.into_iter().filter(|_| rng.below(3) == 0).collect();
        let spec = format!("{}->{output}", operands.join(","));
        let optimum = brute_force_cost(&spec, blas_extent);
        assert_eq!(plan_cost(&spec, blas_extent, PathStrategy::Optimal), optimum, "{spec}");
        assert!(plan_cost(&spec, blas_extent, PathStrategy::Greedy) >= optimum, "{spec}");
    }
}

#[test]
fn long_chains_use_the_greedy_path() {
    let spec = "ab,bc,cd,de,ef,fg,gh,hi,ij,jk,kl->al";
    let (operands, _, _) = label_ids(spec);
    assert!(operands.len() > super::OPTIMAL_OPERAND_LIMIT);
    assert_eq!(
        plan_cost(spec, small_extent, PathStrategy::Auto),
        plan_cost(spec, small_extent, PathStrategy::Greedy)
    );
    check(spec);
}

/// Checks `backward` for every operand of `contraction` against central differences of
/// `sum(weights * contraction(operands))`, and recurses into the gradient contractions `depth`
/// more times, which exercises diagonal and broadcast outputs and higher-order use.
///
/// The weights (the output gradient) are random, or all equal to `uniform` when it is given,
/// which takes the uniform form of the gradient.
fn check_gradients(
    contraction: &Contraction,
    shapes: &[Vec<usize>],
    output_shape: &[usize],
    depth: usize,
    uniform: Option<f64>,
    rng: &mut Rng,
) {
    let inputs: Vec<ArrayD<f64>> = shapes.iter().map(|shape| rng.floats(shape)).collect();
    let weights = match uniform {
        Some(value) => ArrayD::from_elem(IxDyn(output_shape), value),
        None => rng.floats(output_shape),
    };
    let config = PlanConfig { output_shape: Some(output_shape), ..PlanConfig::default() };
    let loss = |inputs: &[ArrayD<f64>]| {
        let views: Vec<ArrayViewD<'_, f64>> = inputs.iter().map(|input| input.view()).collect();
        let plan = contraction.plan_with(shapes, &config).unwrap();
        (&plan.execute(&views).unwrap() * &weights).sum()
    };
    let views: Vec<ArrayViewD<'_, f64>> = inputs.iter().map(|input| input.view()).collect();
    for operand in 0..shapes.len() {
        let gradient = backward(contraction, operand, weights.view(), &views).unwrap();
        assert_eq!(gradient.shape(), shapes[operand].as_slice(), "{contraction} wrt {operand}");
        let step = 1e-3;
        let mut numeric = ArrayD::zeros(IxDyn(&shapes[operand]));
        for (index, value) in numeric.indexed_iter_mut() {
            let mut shifted = inputs.clone();
            shifted[operand][&index] += step;
            let up = loss(&shifted);
            shifted[operand][&index] -= 2.0 * step;
            let down = loss(&shifted);
            *value = (up - down) / (2.0 * step);
        }
        for (analytic, numeric) in gradient.iter().zip(&numeric) {
            let tolerance = 1e-8 * (1.0 + numeric.abs());
            assert!(
                (analytic - numeric).abs() <= tolerance,
                "{contraction} wrt operand {operand}: {gradient} vs {numeric}"
            );
        }
        if depth > 0 {
            let next = contraction.gradient(operand).unwrap();
            let mut next_shapes = vec![output_shape.to_vec()];
            next_shapes.extend(
                shapes.iter().enumerate().filter(|&(k, _)| k != operand).map(|(_, s)| s.clone()),
            );
            check_gradients(&next, &next_shapes, &shapes[operand], depth - 1, uniform, rng);
        }
    }
}

#[test]
fn gradients_match_finite_differences() {
    let specs = [
        "ik,kj->ij",
        "ij->ji",
        "ii->i",
        "ii->",
        "ij->i",
        "ij->",
        "i,j->ij",
        "ij,ij->ij",
        "ia,ajb,bkc,cl->ijkl",
        "ab,bc,cd,da->",
        "iij,jk->ik",
        "cac->a",
        "acada->cd",
        "ijd,d,dkl->ijkl",
        "bij,bjk->bik",
        "ac,cb->abc",
        ",ij->ij",
        "ii,i->i",
    ];
    let mut rng = Rng(5);
    for spec in specs {
        let contraction = Contraction::from_spec(spec).unwrap().scaled(1.5);
        let (operands, output, letters) = label_ids(spec);
        let shape =
            |labels: &[usize]| labels.iter().map(|&l| small_extent(letters[l])).collect::<Vec<_>>();
        let shapes: Vec<Vec<usize>> = operands.iter().map(|labels| shape(labels)).collect();
        check_gradients(&contraction, &shapes, &shape(&output), 1, None, &mut rng);
    }
}

#[test]
fn gradients_of_diagonals_and_sums_have_exact_values() {
    let a = ndarray::array![[1.0, 2.0], [3.0, 4.0]].into_dyn();
    let one = ndarray::arr0(3.0).into_dyn();
    let trace = Contraction::from_spec("ii->").unwrap();
    assert_eq!(trace.gradient(0).unwrap().to_string(), "->ii");
    assert_eq!(
        backward(&trace, 0, one.view(), &[a.view()]).unwrap(),
        ndarray::array![[3.0, 0.0], [0.0, 3.0]].into_dyn()
    );
    let diagonal = Contraction::from_spec("ii->i").unwrap();
    let g = ndarray::array![5.0, 7.0].into_dyn();
    assert_eq!(
        backward(&diagonal, 0, g.view(), &[a.view()]).unwrap(),
        ndarray::array![[5.0, 0.0], [0.0, 7.0]].into_dyn()
    );
    let rows = Contraction::from_spec("ij->i").unwrap();
    assert_eq!(
        backward(&rows, 0, g.view(), &[a.view()]).unwrap(),
        ndarray::array![[5.0, 5.0], [7.0, 7.0]].into_dyn()
    );
    let matmul = Contraction::from_spec("ik,kj->ij").unwrap().scaled(2.0);
    assert_eq!(matmul.gradient(1).unwrap().to_string(), "2 * ij,ik->kj");
    let ones = ArrayD::ones(IxDyn(&[2, 2]));
    // d/dB sum(2 A B) = 2 A^T 1.
    let expected = ndarray::array![[8.0, 8.0], [12.0, 12.0]].into_dyn();
    assert_eq!(backward(&matmul, 1, ones.view(), &[a.view(), a.view()]).unwrap(), expected);
}

#[test]
fn second_order_of_a_quadratic_form() {
    // f(x) = x^T M x as "i,ij,j->"; its gradient in x (operand 0) is M x, and differentiating that
    // gradient contraction again in M's slot gives back the outer product structure.
    let m = ndarray::array![[1.0, 2.0], [3.0, 5.0]].into_dyn();
    let x = ndarray::array![1.0, -1.0].into_dyn();
    let form = Contraction::from_spec("i,ij,j->").unwrap();
    let one = ndarray::arr0(1.0).into_dyn();
    let gradient = backward(&form, 0, one.view(), &[x.view(), m.view(), x.view()]).unwrap();
    assert_eq!(gradient, ndarray::array![-1.0, -2.0].into_dyn());
    let first = form.gradient(0).unwrap();
    assert_eq!(first.to_string(), ",ij,j->i");
    let direction = ndarray::array![1.0, 0.0].into_dyn();
    let second = backward(&first, 2, direction.view(), &[one.view(), m.view(), x.view()]).unwrap();
    // d/dx_j of (M x)_i projected on the direction e_0 is M[0][j].
    assert_eq!(second, m.index_axis(Axis(0), 0).to_owned());
}

/// Specs whose gradients are checked with uniform output gradients: rings, chains, traces,
/// diagonals, broadcast gradients and a scalar operand.
const UNIFORM_SPECS: [&str; 12] = [
    "iab,jbc,kcd,lda->ijkl",
    "ia,ajb,bkc,cl->ijkl",
    "ab,bc,cd,da->",
    "ii->",
    "ij,ji->",
    "ii->i",
    "iij,jk->ik",
    "acada->cd",
    "ij->i",
    "ik,kj->ij",
    ",ij->ij",
    "ii,i->i",
];

#[test]
fn uniform_gradients_match_finite_differences() {
    let mut rng = Rng(23);
    for spec in UNIFORM_SPECS {
        let contraction = Contraction::from_spec(spec).unwrap().scaled(1.5);
        let (operands, output, letters) = label_ids(spec);
        let shape =
            |labels: &[usize]| labels.iter().map(|&l| small_extent(letters[l])).collect::<Vec<_>>();
        let shapes: Vec<Vec<usize>> = operands.iter().map(|labels| shape(labels)).collect();
        for value in [1.0, -0.75] {
            check_gradients(&contraction, &shapes, &shape(&output), 1, Some(value), &mut rng);
        }
    }
}

#[test]
fn uniform_and_full_gradient_forms_agree() {
    let mut rng = Rng(29);
    for spec in UNIFORM_SPECS {
        let contraction = Contraction::from_spec(spec).unwrap().scaled(-2.0);
        let (operands, output, letters) = label_ids(spec);
        let shape =
            |labels: &[usize]| labels.iter().map(|&l| small_extent(letters[l])).collect::<Vec<_>>();
        let inputs: Vec<ArrayD<f64>> =
            operands.iter().map(|labels| rng.integers(&shape(labels))).collect();
        let views: Vec<ArrayViewD<'_, f64>> = inputs.iter().map(|input| input.view()).collect();
        let g = ArrayD::from_elem(IxDyn(&shape(&output)), 3.0);
        for operand in 0..operands.len() {
            // The full form, planned by hand with the output gradient as an operand.
            let full = contraction.gradient(operand).unwrap();
            let mut full_inputs = vec![g.view()];
            full_inputs.extend(
                views.iter().enumerate().filter(|&(k, _)| k != operand).map(|(_, v)| v.clone()),
            );
            let full_shapes: Vec<&[usize]> = full_inputs.iter().map(|v| v.shape()).collect();
            let config =
                PlanConfig { output_shape: Some(views[operand].shape()), ..PlanConfig::default() };
            let expected =
                full.plan_with(&full_shapes, &config).unwrap().execute(&full_inputs).unwrap();
            // Integer inputs: both forms are exact.
            let uniform = backward(&contraction, operand, g.view(), &views).unwrap();
            assert_eq!(uniform, expected, "{spec} wrt {operand}");
            let formed = contraction.uniform_gradient(operand, 3.0, g.shape()).unwrap();
            assert_eq!(formed.operands().len(), operands.len() - 1, "{spec}");
            assert_eq!(formed.factor(), -6.0, "{spec}");
        }
    }
}

#[test]
fn uniform_ring_gradient_is_far_cheaper_than_the_full_one() {
    // The benchmark's ring: the full gradient costs as much as the forward pass (about 1e10
    // flops); with a uniform output gradient the open legs j, k, l are summed out of B, C and E
    // first and three small products remain.
    let ring = Contraction::from_spec("iab,jbc,kcd,lda->ijkl").unwrap();
    let operand = vec![32, 64, 64];
    let forward = ring.plan(&vec![operand.clone(); 4]).unwrap().path().cost();
    let config = PlanConfig { output_shape: Some(&operand), ..PlanConfig::default() };
    let mut full_shapes = vec![vec![32; 4]];
    full_shapes.extend(vec![operand.clone(); 3]);
    let full = ring.gradient(0).unwrap().plan_with(&full_shapes, &config).unwrap();
    assert_eq!(full.path().cost(), forward);
    assert_eq!(forward, 9_663_676_416.0);
    let uniform = ring.uniform_gradient(0, 1.0, &[32; 4]).unwrap();
    assert_eq!(uniform.to_string(), "jbc,kcd,lda->iab");
    let plan = uniform.plan_with(&vec![operand.clone(); 3], &config).unwrap();
    // (bc, cd) -> bd then (bd, da) -> ab, each 2 * 64^3.
    assert_eq!(plan.path().cost(), 2.0 * 2.0 * 64f64.powi(3));
}

#[test]
fn uniform_values_are_detected_exactly() {
    use super::uniform_value;
    let ones = ArrayD::<f64>::ones(IxDyn(&[3, 4]));
    assert_eq!(uniform_value(&ones.view()), Some(1.0));
    assert_eq!(uniform_value(&ones.view().reversed_axes()), Some(1.0));
    assert_eq!(uniform_value(&ndarray::arr0(-2.5).into_dyn().view()), Some(-2.5));
    let mut almost = ones.clone();
    almost[[2, 3]] = 1.0 + f64::EPSILON;
    assert_eq!(uniform_value(&almost.view()), None);
    // A strided view of the uniform columns of a non-uniform tensor.
    let mut columns = ArrayD::<f64>::zeros(IxDyn(&[3, 4]));
    columns.slice_mut(s![.., 1..;2]).fill(7.0);
    assert_eq!(uniform_value(&columns.slice(s![.., 1..;2]).into_dyn()), Some(7.0));
    assert_eq!(uniform_value(&columns.view()), None);
    let signed = ndarray::array![0.0, -0.0].into_dyn();
    assert_eq!(uniform_value(&signed.view()), Some(0.0));
    let nan = ArrayD::from_elem(IxDyn(&[2]), f64::NAN);
    assert_eq!(uniform_value(&nan.view()), None);
    let empty = ArrayD::<f64>::zeros(IxDyn(&[2, 0]));
    assert_eq!(uniform_value(&empty.view()), None);
}

#[test]
fn backward_checks_the_output_gradient_shape_in_both_forms() {
    let matmul = Contraction::from_spec("ik,kj->ij").unwrap();
    let a = ArrayD::<f64>::ones(IxDyn(&[2, 3]));
    let b = ArrayD::<f64>::ones(IxDyn(&[3, 4]));
    for g in [ArrayD::<f64>::ones(IxDyn(&[2, 5])), ArrayD::<f64>::zeros(IxDyn(&[2, 5]))] {
        let error = backward(&matmul, 0, g.view(), &[a.view(), b.view()]).unwrap_err();
        assert!(matches!(error, EinsumError::ExtentMismatch { .. }), "{error:?}");
    }
    let ones = ArrayD::<f64>::ones(IxDyn(&[2, 4]));
    let gradient = backward(&matmul, 0, ones.view(), &[a.view(), b.view()]).unwrap();
    assert_eq!(gradient, ArrayD::from_elem(IxDyn(&[2, 3]), 4.0));
}
