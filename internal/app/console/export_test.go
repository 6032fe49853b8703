package console

// Money is money, for the tests.
var Money = money

// Duration is duration, for the tests.
var Duration = duration

// FormZone and FormTime read a form's time zone and times, for the tests.
var (
	FormZone = formZone
	FormTime = formTime
)
