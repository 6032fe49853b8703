package console

// Money is money, for the tests.
var Money = money
