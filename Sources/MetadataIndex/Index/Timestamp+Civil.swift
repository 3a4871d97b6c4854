extension Timestamp {
    /// The instant's calendar date and time of day in UTC, on the
    /// proleptic Gregorian calendar: what `iso8601` and mdq's attribute
    /// printing write out, digit by digit.
    var civil: (year: Int64, month: Int64, day: Int64, secondOfDay: Int64, nanosecond: Int64) {
        var seconds = nanosecondsSinceEpoch / 1_000_000_000
        var nanos = nanosecondsSinceEpoch % 1_000_000_000
        if nanos < 0 {
            nanos += 1_000_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        // Civil-from-days (Howard Hinnant's algorithm): shift the year to
        // start in March so the leap day comes last, then count 400-year eras.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day, secondOfDay, nanos)
    }
}
