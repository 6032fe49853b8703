package console

// Money is money, for the tests.
var Money = money

// Duration is duration, for the tests.
var Duration = duration
