use midpoint::midpoint;

#[test]
fn does_not_overflow() {
    assert_eq!(midpoint(u32::MAX, u32::MAX - 2), u32::MAX - 1);
}
