## Every page: the frame, the language switcher, error pages, units and times.

skip-to-content = Перейти до вмісту
language-switcher = Мова

## Error pages

error-title-not-found = Не знайдено
error-title-slow-down = Не так швидко
error-title-forbidden = Заборонено
error-title-method = Метод не підтримується
error-title-busy = Сервер зайнятий
error-title-server = Щось пішло не так
error-title-other = Не вдалося
error-back-link = Повернутися на стартову сторінку
error-back-rest = , де можна створити нову URL-адресу.
err-no-page = За цією адресою немає сторінки.
err-no-file = Такого файлу немає.
err-method = Ця адреса приймає лише { $allow }.
err-bin-not-found = Такого біна немає: його не було, його видалили або строк його зберігання минув.
err-request-not-found = У цьому біні немає такого запиту (його видалено або витіснено новішими).
err-too-many-bins = З однієї адреси можна створити лише обмежену кількість бінів за хвилину. Спробуйте знову через { $seconds } с.
err-cross-site = Форми цього сайту можна надсилати лише з його власних сторінок.
err-bad-cursor = Посилання на цю сторінку пошкоджене (невідомий курсор).
err-queue-full = Сервер зайнятий збереженням інших запитів. Спробуйте знову за мить.
err-storage-full = На сервері закінчилося місце для даних. Спробуйте пізніше.
err-shutting-down = Сервер зупиняється. Спробуйте знову за кілька секунд.
err-internal = Серверу не вдалося виконати запит; причину записано в його журналі.
err-form-timeout = Форма не надійшла вчасно. Надішліть її ще раз.
err-form-too-large = Форма завелика для цього сервера.
err-other = Сервер відмовив: { $detail }.

## Units and times

bytes = { $count ->
    [one] { $n } байт
    [few] { $n } байти
   *[many] { $n } байтів
}
size-b = { $n } Б
size-kib = { $n } КіБ
size-mib = { $n } МіБ
size-gib = { $n } ГіБ
size-tib = { $n } ТіБ
# A span of time after "через" (accusative).
duration-seconds = { $count ->
    [one] { $n } секунду
    [few] { $n } секунди
    [many] { $n } секунд
   *[other] { $n } секунди
}
duration-minutes = { $count ->
    [one] { $n } хвилину
    [few] { $n } хвилини
    [many] { $n } хвилин
   *[other] { $n } хвилини
}
duration-hours = { $count ->
    [one] { $n } годину
    [few] { $n } години
    [many] { $n } годин
   *[other] { $n } години
}
duration-days = { $count ->
    [one] { $n } день
    [few] { $n } дні
    [many] { $n } днів
   *[other] { $n } дня
}
time-now = зараз
time-in = через { $duration }

## Strings of the page's script (static/app.js).

js-copied = Скопійовано
js-copy-failed = Не скопійовано
js-copied-announce = Скопійовано в буфер обміну
js-copy-failed-announce = Не вдалося скопіювати: виділіть текст і скопіюйте його вручну
js-could-not-copy = Не вдалося скопіювати
js-no-curl = Для цього запиту немає команди curl
js-copied-curl = Запит скопійовано як команду curl
js-pick-request = Виберіть запит
js-pick-request-hint = Виберіть запит у списку, щоб побачити його тут.
js-bin-deleted = Цей бін видалено
js-new-request = Новий запит { $method }
js-jump-new = { $category ->
    [one] ↑ { $n } новий запит
    [few] ↑ { $n } нові запити
   *[many] ↑ { $n } нових запитів
}
js-newer = { $category ->
    [one] { $n } новий запит: показати нові
    [few] { $n } нові запити: показати нові
   *[many] { $n } нових запитів: показати нові
}
js-hidden = { $category ->
    [one] { $n } новий запит не відповідав пошуку.
    [few] { $n } нові запити не відповідали пошуку.
   *[many] { $n } нових запитів не відповідали пошуку.
}
js-bytes = { $category ->
    [one] { $n } байт
    [few] { $n } байти
   *[many] { $n } байтів
}
js-size-b = { $n } Б
js-size-kib = { $n } КіБ
js-size-mib = { $n } МіБ
js-size-gib = { $n } ГіБ
js-size-tib = { $n } ТіБ
js-new-requests = ↑ Нові запити
js-live = наживо
js-connecting = підключення
js-paused = на паузі
js-reconnecting = перепідключення
js-offline = немає зв'язку: оновіть сторінку
js-live-deleted = бін видалено
js-copy = Копіювати
js-copy-failed-short = Помилка
js-copy-value = Копіювати це значення
js-copied-header = Значення заголовка скопійовано
js-copy-failed-download = Не вдалося скопіювати: завантажте файл
js-copy-failed-script = Не вдалося скопіювати: завантажте скрипт
js-fetch-failed-script = Не вдалося отримати команду: завантажте скрипт
js-checked = Перевірено
js-recent-opened = відкрито { $when }
js-shortcuts = Комбінації клавіш
js-close = Закрити
js-key-next = наступний запит
js-key-previous = попередній запит
js-key-curl = копіювати запит як curl
js-key-search = пошук
js-key-follow = увімкнути або вимкнути стеження за новими
js-key-help = цей список
js-key-close = закрити
js-following = Стеження за новими запитами ввімкнено
js-not-following = Стеження вимкнено
