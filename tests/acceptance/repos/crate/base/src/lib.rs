/// The midpoint of two numbers, without overflow.
pub fn midpoint(a: u32, b: u32) -> u32 {
    (a + b) / 2
}

#[cfg(test)]
mod tests {
    use super::midpoint;

    #[test]
    fn small_numbers() {
        assert_eq!(midpoint(2, 4), 3);
    }
}
